// torch.classes.w4jit.Linear: a layer built once from a checkpoint's own
// tensors, in any of the formats w4jit imports. It holds the packed layer
// itself, so it needs no cache and never depends on the source tensors
// after construction.
#ifndef W4JIT_TORCH_LINEAR_CLASS_H_
#define W4JIT_TORCH_LINEAR_CLASS_H_

#include <torch/custom_class.h>

#include <memory>
#include <string>
#include <vector>

#include "w4jit/layer.hpp"

namespace w4jit::torch_ext {

class LinearClass : public torch::CustomClassHolder {
 public:
  // format: "compressed_tensors", "gptq_v1", "gptq_v2", "awq",
  // "unpacked_int8" or "zentorch_int32" (shapes in the README's format
  // table); mode "w4a16" or "da8w4"; group_size -1 (per-channel) or a
  // divisor of K; act_dtype "bfloat16" or "float32" (the dtype of x and
  // of the output). groups_major: for the unpacked and zentorch formats,
  // whether scales/zero points are [G, N] (true) or [N, G]. epilogue:
  // "none", an activation ("relu", "sigmoid", "gelu_tanh", "gelu_erf",
  // "silu") or "silu_mul" (merged [gate | up] weight, N / 2 outputs),
  // optionally followed by "+add", "+mul_add" or "+add_add" (operands in
  // act_dtype, passed to forward_with). act_quant: DA8W4 activation scales,
  // "per_token" or "per_group" (LayerDesc::act_quant). numerics: "exact",
  // "zentorch" (each dequantized weight rounded to bf16, as zentorch
  // computes; W4A16 only) or "" for W4JIT_NUMERICS (LayerDesc::numerics).
  // non_finite: "propagate" (a row of x holding NaN / Inf gives a
  // non-finite row of y) or "error" (forward raises naming the element;
  // LayerDesc::non_finite).
  LinearClass(const std::string& format, const at::Tensor& qweight,
              const at::Tensor& scales,
              const c10::optional<at::Tensor>& zero_points,
              const c10::optional<at::Tensor>& g_idx,
              const c10::optional<at::Tensor>& bias, const std::string& mode,
              int64_t group_size, const std::string& act_dtype,
              bool groups_major, const std::string& epilogue,
              const std::string& act_quant, const std::string& numerics,
              const std::string& non_finite);

  at::Tensor forward(const at::Tensor& x) const;
  // forward with the epilogue's binary operands ([..., N_out] each).
  at::Tensor forward_with(const at::Tensor& x,
                          const std::vector<at::Tensor>& operands) const;

  int64_t in_features() const { return layer_->desc().k; }
  int64_t out_features() const { return layer_->desc().out_n(); }
  int64_t group_size() const { return layer_->desc().group_size; }
  std::string mode() const;
  std::string act_quant() const;
  std::string numerics() const;
  std::string non_finite() const;
  std::vector<std::string> kernel_names() const;
  int64_t packed_bytes() const;

  const Layer& layer() const { return *layer_; }

 private:
  std::shared_ptr<const Layer> layer_;
};

// Registers the class with torch (called from the library's
// TORCH_LIBRARY block).
void RegisterLinearClass(torch::Library& m);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_LINEAR_CLASS_H_
