#include "w4jit/types.hpp"

#include "w4jit/w4jit.hpp"

namespace w4jit {

const char* ToString(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  return "unknown-dtype";
}

const char* ToString(WeightType t) {
  switch (t) {
    case WeightType::kS4:
      return "s4";
    case WeightType::kU4:
      return "u4";
  }
  return "unknown-weight-type";
}

const char* ToString(Mode m) {
  switch (m) {
    case Mode::kW4A16:
      return "w4a16";
    case Mode::kDA8W4:
      return "da8w4";
  }
  return "unknown-mode";
}

const char* ToString(NonFinitePolicy p) {
  switch (p) {
    case NonFinitePolicy::kError:
      return "error";
    case NonFinitePolicy::kPropagate:
      return "propagate";
  }
  return "unknown-non-finite-policy";
}

const char* ToString(ActQuant a) {
  switch (a) {
    case ActQuant::kPerToken:
      return "per_token";
    case ActQuant::kPerGroup:
      return "per_group";
  }
  return "unknown-act-quant";
}

const char* ToString(Numerics n) {
  switch (n) {
    case Numerics::kExact:
      return "exact";
    case Numerics::kZentorch:
      return "zentorch";
  }
  return "unknown-numerics";
}

const char* ToString(WeightFormat f) {
  switch (f) {
    case WeightFormat::kUnpackedInt8:
      return "unpacked-int8";
    case WeightFormat::kZentorchInt32:
      return "zentorch-int32";
    case WeightFormat::kCompressedTensors:
      return "compressed-tensors";
    case WeightFormat::kGptqV1:
      return "gptq-v1";
    case WeightFormat::kGptqV2:
      return "gptq-v2";
    case WeightFormat::kAwqGemm:
      return "awq-gemm";
    case WeightFormat::kTinygemmInt4Pack:
      return "tinygemm-int4pack";
  }
  return "unknown-format";
}

const char* ToString(ZeroPointDomain z) {
  switch (z) {
    case ZeroPointDomain::kInteger:
      return "integer";
    case ZeroPointDomain::kFloat:
      return "float";
  }
  return "unknown-zero-point-domain";
}

const char* ToString(Activation a) {
  switch (a) {
    case Activation::kNone:
      return "none";
    case Activation::kRelu:
      return "relu";
    case Activation::kSigmoid:
      return "sigmoid";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kGeluErf:
      return "gelu_erf";
    case Activation::kSilu:
      return "silu";
    case Activation::kSwigluOai:
      return "swigluoai";
  }
  return "unknown-activation";
}

const char* ToString(BinaryOp op) {
  switch (op) {
    case BinaryOp::kMul:
      return "mul";
    case BinaryOp::kAdd:
      return "add";
  }
  return "unknown-op";
}

const char* ToString(ComputeOp op) {
  switch (op) {
    case ComputeOp::kScalar:
      return "scalar";
    case ComputeOp::kF32Fma:
      return "f32_fma";
    case ComputeOp::kBf16Dot:
      return "bf16_dot";
    case ComputeOp::kInt8Dot:
      return "int8_dot";
    case ComputeOp::kAmxBf16:
      return "amx_bf16";
    case ComputeOp::kAmxInt8:
      return "amx_int8";
  }
  return "unknown-compute-op";
}

const char* Version() { return "0.1.0"; }

}  // namespace w4jit
