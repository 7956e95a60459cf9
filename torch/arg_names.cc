#include "torch/arg_names.h"

#include <c10/util/Exception.h>

#include <string>

namespace w4jit::torch_ext {

WeightFormat ParseWeightFormat(const char* op, c10::string_view f) {
  if (f == "compressed_tensors") return WeightFormat::kCompressedTensors;
  if (f == "gptq_v1" || f == "gptq") return WeightFormat::kGptqV1;
  if (f == "gptq_v2") return WeightFormat::kGptqV2;
  if (f == "awq") return WeightFormat::kAwqGemm;
  if (f == "unpacked_int8") return WeightFormat::kUnpackedInt8;
  if (f == "zentorch_int32") return WeightFormat::kZentorchInt32;
  TORCH_CHECK(false, op, ": format '", std::string(f),
              "' is not one of compressed_tensors, gptq_v1, gptq_v2, awq, "
              "unpacked_int8, zentorch_int32");
  return WeightFormat::kUnpackedInt8;  // not reached
}

Mode ParseMode(const char* op, c10::string_view m) {
  if (m == "w4a16") return Mode::kW4A16;
  if (m == "da8w4") return Mode::kDA8W4;
  TORCH_CHECK(false, op, ": mode '", std::string(m), "' is not w4a16 or da8w4");
  return Mode::kW4A16;  // not reached
}

ActQuant ParseActQuant(const char* op, c10::string_view name) {
  if (name == "per_token") return ActQuant::kPerToken;
  if (name == "per_group") return ActQuant::kPerGroup;
  TORCH_CHECK(false, op, ": act_quant '", std::string(name),
              "' is not per_token or per_group");
  return ActQuant::kPerToken;  // not reached
}

NonFinitePolicy ParseNonFinite(const char* op, c10::string_view name) {
  if (name == "error") return NonFinitePolicy::kError;
  if (name == "propagate") return NonFinitePolicy::kPropagate;
  TORCH_CHECK(false, op, ": non_finite '", std::string(name),
              "' is not error or propagate");
  return NonFinitePolicy::kError;  // not reached
}

DType ParseActDType(const char* op, c10::string_view d) {
  if (d == "bfloat16") return DType::kBF16;
  if (d == "float32") return DType::kF32;
  TORCH_CHECK(false, op, ": act_dtype '", std::string(d),
              "' is not bfloat16 or float32");
  return DType::kBF16;  // not reached
}

Activation ParseGateActivation(const char* op, const char* arg,
                               c10::string_view act) {
  if (act == "silu") return Activation::kSilu;
  if (act == "gelu" || act == "gelu_erf") return Activation::kGeluErf;
  if (act == "gelu_tanh") return Activation::kGeluTanh;
  TORCH_CHECK(false, op, ": ", arg, " = '", std::string(act),
              "' is not silu, gelu or gelu_tanh");
  return Activation::kNone;  // not reached
}

void CheckNotPrepacked(const char* op, bool is_weight_prepacked) {
  TORCH_CHECK(!is_weight_prepacked, op,
              ": is_weight_prepacked = True names zentorch's prepacked "
              "weight layout, which w4jit does not take; pass the weight as "
              "woq_repack_weight makes it (or int8 [N, K/2]) with "
              "is_weight_prepacked = False");
}

}  // namespace w4jit::torch_ext
