// The routing arguments of a MoE call from torch (fused_moe, w4jit.MoE):
// topk ids [T, k] int32 or int64 and routing weights [T, k] of any float
// dtype, checked and converted to what MoeLayer::Run reads.
#ifndef W4JIT_TORCH_MOE_ROUTING_ARGS_H_
#define W4JIT_TORCH_MOE_ROUTING_ARGS_H_

#include <ATen/ATen.h>

#include <cstdint>

#include "w4jit/types.hpp"

namespace w4jit::torch_ext {

struct RoutingTensors {
  at::Tensor ids;      // int32 [T, k], contiguous
  at::Tensor weights;  // f32 [T, k], contiguous; undefined if not given
  int64_t k = 0;
};

// ids_name: the ids argument's name in the caller's signature. `weights`
// null: unweighted (not read). int64 ids are narrowed to int32
// after checking that each is an expert id in [0, experts) (MoeLayer::Run
// checks int32 ones), so a large id cannot wrap onto a valid one: with
// NonFinitePolicy::kError an id outside is an error, with kPropagate it
// becomes -1, which MoeLayer::Run then treats as the bad id it was. Errors
// are c10::Errors naming the op, the argument and the value.
RoutingTensors CheckRouting(const char* op, const char* ids_name,
                            const at::Tensor& topk_ids,
                            const at::Tensor* weights, int64_t t,
                            int64_t experts, NonFinitePolicy non_finite);

// The MoE gate of a host's `act` string: "silu", "gelu" / "gelu_erf",
// "gelu_tanh" (ParseGateActivation) or "swigluoai" (gpt-oss, interleaved
// w13 rows).
Activation ParseMoeActivation(const char* op, const char* arg,
                              c10::string_view act);

// A MoE call's mode: "w4a16", "da8w4", or "auto", zentorch's rule: DA8W4
// (per-token activation scales unless act_quant says otherwise) for s4
// weights with bf16 input, as zentorch_fused_moe computes them; W4A16
// for f32 input (which zentorch refuses: an f32 host asks for accuracy,
// and W4A16 keeps x in f32) and for u4 weights (DA8W4 is s4 only;
// zentorch has no zero points).
Mode ResolveMoeMode(const char* op, c10::string_view mode, DType act_dtype,
                    WeightType weight_type);

// The weight containers of stacked experts: int32 [E, N, K / 8] as
// woq_repack_weight makes them, or the same bytes as int8 / uint8
// [E, N, K / 2] (k even in the low nibble). Checks `w` (CPU, 3-D,
// contiguous, E experts, N rows) and returns the words per row it
// holds, in K units: K = size(2) * 8 or * 2.
int64_t PackedK(const char* op, const char* name, const at::Tensor& w);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_MOE_ROUTING_ARGS_H_
