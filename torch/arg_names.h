// The string arguments the ops and custom classes share (format, mode,
// activation scales, activation dtype, gate activation), parsed into w4jit's
// enums. Each raises a c10::Error naming the op, the argument and the bad
// value.
#ifndef W4JIT_TORCH_ARG_NAMES_H_
#define W4JIT_TORCH_ARG_NAMES_H_

#include <c10/util/string_view.h>

#include "w4jit/types.hpp"

namespace w4jit::torch_ext {

// "compressed_tensors", "gptq_v1" (or "gptq"), "gptq_v2", "awq",
// "unpacked_int8", "zentorch_int32".
WeightFormat ParseWeightFormat(const char* op, c10::string_view name);
// "w4a16" or "da8w4".
Mode ParseMode(const char* op, c10::string_view name);
// DA8W4 activation scales: "per_token" or "per_group".
ActQuant ParseActQuant(const char* op, c10::string_view name);
// NaN / Inf in x (and a MoE layer's routing): "error" or "propagate"
// (NonFinitePolicy, w4jit/types.hpp).
NonFinitePolicy ParseNonFinite(const char* op, c10::string_view name);
// "bfloat16" or "float32": the dtype of x and y.
DType ParseActDType(const char* op, c10::string_view name);
// The gate of a gated MLP: "silu", "gelu" (or "gelu_erf"), "gelu_tanh".
// `arg` is the argument's name in the caller's signature.
Activation ParseGateActivation(const char* op, const char* arg,
                               c10::string_view name);
// zentorch's dynamic_qlinear keyword is_weight_prepacked: true names
// zentorch's own prepacked (zentorch_weight_prepack_for_dynamic_qlinear)
// layout, which w4jit does not read; refused with a message saying so.
void CheckNotPrepacked(const char* op, bool is_weight_prepacked);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_ARG_NAMES_H_
