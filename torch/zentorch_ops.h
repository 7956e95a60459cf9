// The three ops vLLM's zentorch kernel class calls, with the same
// arguments and results, so a host swaps torch.ops.zentorch.zentorch_X for
// torch.ops.w4jit.X and nothing else.
#ifndef W4JIT_TORCH_ZENTORCH_OPS_H_
#define W4JIT_TORCH_ZENTORCH_OPS_H_

#include <ATen/ATen.h>

#include <memory>

#include "w4jit/layer.hpp"

namespace w4jit::torch_ext {

// int8 [N, K] with values in [-8, 15] (s4 -8..7, or u4 0..15) -> int32
// [N, K/8], value k at nibble k % 8 of word (n, k / 8).
at::Tensor WoqRepackWeight(const at::Tensor& w);

// W4A16. packed: int32 [K/8, N], normally the transposed view of
// WoqRepackWeight's result; scales [G, N] f32/bf16/f16; zero_points int8
// [G, N] (u4, (u - z) * s), bf16/f32 [G, N] (u4 with float zero points,
// (u - 8) * s + z) or None (s4); bias [N] or None; x f32/bf16 [..., K]. Output
// [..., N] in x's dtype. `non_finite`: this call's policy for NaN / Inf in
// x (LayerRunOptions; the cached layer is the same for both).
at::Tensor WoqLinear(const at::Tensor& x, const at::Tensor& packed,
                     const at::Tensor& scales,
                     const c10::optional<at::Tensor>& zero_points,
                     const c10::optional<at::Tensor>& bias,
                     NonFinitePolicy non_finite = NonFinitePolicy::kPropagate);

// DA8W4, symmetric s4. packed: int8 [N, K/2] (or the same bytes as int32
// [N, K/8]); scales [G, N]; bias [N] or None; x bf16 (or f32) [..., K].
// Output [..., N] in x's dtype (bf16 for the calls the seed makes).
// With `out`, the result goes into the caller's contiguous tensor (of the
// result's shape and dtype), which is returned. `act_quant` picks the
// activation scales (LayerDesc::act_quant); a layer is cached per choice.
at::Tensor DynamicQLinear(
    const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
    const c10::optional<at::Tensor>& bias, const at::Tensor* out = nullptr,
    ActQuant act_quant = ActQuant::kPerToken,
    NonFinitePolicy non_finite = NonFinitePolicy::kPropagate);

// woq_linear with a fused epilogue (zentorch's woq_linear_relu, _add,
// _mul_add, ... and woq_linear_silu_mul): `e` gives the activation, the
// binary ops and silu_mul; the operand dtypes are those of `operands`
// (one per binary op, each the output's shape). `op` names the op in
// errors; `out` and `non_finite` as for DynamicQLinear.
at::Tensor WoqLinearEpilogue(
    const char* op, const at::Tensor& x, const at::Tensor& packed,
    const at::Tensor& scales, const c10::optional<at::Tensor>& zero_points,
    const c10::optional<at::Tensor>& bias, Epilogue e,
    c10::ArrayRef<at::Tensor> operands, const at::Tensor* out,
    NonFinitePolicy non_finite = NonFinitePolicy::kPropagate);

// The validated, cached layer a call with these arguments would run
// (built on the first call). For the overhead probe.
std::shared_ptr<const Layer> WoqLinearLayer(
    const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
    const c10::optional<at::Tensor>& zero_points,
    const c10::optional<at::Tensor>& bias);
std::shared_ptr<const Layer> DynamicQLinearLayer(
    const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
    const c10::optional<at::Tensor>& bias);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_ZENTORCH_OPS_H_
