// One layer's checkpoint tensors in any format w4jit.Linear and w4jit.MoE
// import: their shapes and dtypes checked against the format's layout
// (README "Checkpoint formats"), and a WeightsView over contiguous copies.
#ifndef W4JIT_TORCH_CHECKPOINT_TENSORS_H_
#define W4JIT_TORCH_CHECKPOINT_TENSORS_H_

#include <ATen/ATen.h>

#include "w4jit/types.hpp"

namespace w4jit::torch_ext {

bool Present(const c10::optional<at::Tensor>& t);

// Contiguous (bias: LayerBias) tensors the view points into; undefined
// where absent. Must outlive the layer's creation.
struct CheckpointTensors {
  WeightFormat format = WeightFormat::kUnpackedInt8;
  bool groups_major = true;
  at::Tensor qweight, scales, zero_points, g_idx, bias;
  // WeightsView::scale_groups: 0, or the scales' groups where g_idx is
  // given and they are more than K / group_size (a K-shard).
  int64_t scale_groups = 0;
  WeightsView view() const;
};

// Checks one layer's tensors in `format` (qweight's shape gives N and K;
// group_size -1 or a divisor of K; scales f32/bf16/f16; zero points, if
// given, make the weights u4; g_idx [K] int32, not for AWQ, with which
// scales and zero points may hold more than K / group_size groups: a
// K-shard of an act-order checkpoint, WeightsView::scale_groups; bias [N]) and
// fills d->n, k, group_size, scale_dtype, weight_type, has_bias and
// bias_dtype. Errors are c10::Errors "<op>: <argument> ...".
CheckpointTensors CheckCheckpoint(const char* op, WeightFormat format,
                                  const at::Tensor& qweight,
                                  const at::Tensor& scales,
                                  const c10::optional<at::Tensor>& zero_points,
                                  const c10::optional<at::Tensor>& g_idx,
                                  const c10::optional<at::Tensor>& bias,
                                  int64_t group_size, bool groups_major,
                                  LayerDesc* d);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_CHECKPOINT_TENSORS_H_
