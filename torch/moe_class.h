// torch.classes.w4jit.MoE: a fused MoE layer (w4jit::MoeLayer) built once
// from a checkpoint's expert tensors, in any format w4jit.Linear takes.
// Like torch.classes.w4jit.Linear it holds the packed layer itself: no
// cache, and the source tensors may be freed after construction.
#ifndef W4JIT_TORCH_MOE_CLASS_H_
#define W4JIT_TORCH_MOE_CLASS_H_

#include <torch/custom_class.h>

#include <memory>
#include <string>
#include <vector>

#include "w4jit/moe.hpp"

namespace w4jit::torch_ext {

class MoeClass : public torch::CustomClassHolder {
 public:
  // One tensor per expert in each list (w4jit.MoE unbinds stacked [E, ...]
  // tensors); an empty list is an absent tensor. w13 is each expert's
  // merged [gate | up] projection (N = 2I, K = H), w2 its down projection
  // (N = H, K = I), both in `format` with the shapes of the README's
  // format table. Zero points for both projections (u4) or neither (s4);
  // biases and g_idx per projection, optional. mode "w4a16" or "da8w4";
  // group_size -1 or a divisor of H and of I; act_dtype "bfloat16" or
  // "float32" (x and y); groups_major as for w4jit.Linear; activation
  // "silu", "gelu", "gelu_tanh" or "swigluoai" (gpt-oss: w13 rows
  // interleaved gate, up, ...; swiglu_alpha and swiglu_limit its
  // constants); act_quant (DA8W4) "per_token" or "per_group"; non_finite
  // "error" or "propagate" (MoeDesc::non_finite: a token with a
  // non-finite routing weight, NaN / Inf in x or an id outside [0, E)
  // raises, or gets a NaN row of y). Every mismatch is a RuntimeError
  // naming the expert, the projection, the argument and the value.
  MoeClass(const std::string& format,
           const std::vector<at::Tensor>& w13_qweight,
           const std::vector<at::Tensor>& w13_scales,
           const std::vector<at::Tensor>& w13_zero_points,
           const std::vector<at::Tensor>& w13_g_idx,
           const std::vector<at::Tensor>& w13_bias,
           const std::vector<at::Tensor>& w2_qweight,
           const std::vector<at::Tensor>& w2_scales,
           const std::vector<at::Tensor>& w2_zero_points,
           const std::vector<at::Tensor>& w2_g_idx,
           const std::vector<at::Tensor>& w2_bias, const std::string& mode,
           int64_t group_size, const std::string& act_dtype, bool groups_major,
           const std::string& activation, const std::string& act_quant,
           double swiglu_alpha, double swiglu_limit,
           const std::string& non_finite);

  // x [T, H] in act_dtype, topk_ids [T, k] int32/int64, topk_weights
  // [T, k] float (None: every weight 1). Returns y [T, H] in act_dtype.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& topk_ids,
                     const c10::optional<at::Tensor>& topk_weights) const;

  int64_t experts() const { return layer_->desc().experts; }
  int64_t hidden() const { return layer_->desc().hidden; }
  int64_t intermediate() const { return layer_->desc().intermediate; }
  int64_t group_size() const { return layer_->desc().group_size; }
  std::string mode() const;
  std::string activation() const;
  std::string act_quant() const;
  double swiglu_alpha() const;
  double swiglu_limit() const;
  std::string non_finite() const;
  std::vector<std::string> kernel_names() const;
  int64_t packed_bytes() const;
  int64_t expert_packed_bytes() const;

  const MoeLayer& layer() const { return *layer_; }

 private:
  std::shared_ptr<const MoeLayer> layer_;
};

void RegisterMoeClass(torch::Library& m);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_MOE_CLASS_H_
