// The C API converts its enums to the C++ ones with a cast of the value
// (RawEnum, runtime/c_api/c_api_status.h): these checks make a member that
// one side renumbers fail to compile. A member added to one side needs its
// line here too.
#include "w4jit/types.hpp"
#include "w4jit/w4jit.h"

namespace w4jit::internal {
namespace {

// The C value `c` and the C++ member `cpp` are the same number.
template <class Cpp>
constexpr bool Same(int c, Cpp cpp) {
  return c == static_cast<int>(cpp);
}

static_assert(Same(W4JIT_F32, DType::kF32) && Same(W4JIT_BF16, DType::kBF16) &&
              Same(W4JIT_F16, DType::kF16));
static_assert(Same(W4JIT_S4, WeightType::kS4) &&
              Same(W4JIT_U4, WeightType::kU4));
static_assert(Same(W4JIT_W4A16, Mode::kW4A16) &&
              Same(W4JIT_DA8W4, Mode::kDA8W4));
static_assert(Same(W4JIT_ACT_QUANT_PER_TOKEN, ActQuant::kPerToken) &&
              Same(W4JIT_ACT_QUANT_PER_GROUP, ActQuant::kPerGroup));
static_assert(Same(W4JIT_NUMERICS_EXACT, Numerics::kExact) &&
              Same(W4JIT_NUMERICS_ZENTORCH, Numerics::kZentorch));
static_assert(Same(W4JIT_NON_FINITE_ERROR, NonFinitePolicy::kError) &&
              Same(W4JIT_NON_FINITE_PROPAGATE, NonFinitePolicy::kPropagate));
static_assert(Same(W4JIT_FORMAT_UNPACKED_INT8, WeightFormat::kUnpackedInt8) &&
              Same(W4JIT_FORMAT_ZENTORCH_INT32, WeightFormat::kZentorchInt32) &&
              Same(W4JIT_FORMAT_COMPRESSED_TENSORS,
                   WeightFormat::kCompressedTensors) &&
              Same(W4JIT_FORMAT_GPTQ_V1, WeightFormat::kGptqV1) &&
              Same(W4JIT_FORMAT_GPTQ_V2, WeightFormat::kGptqV2) &&
              Same(W4JIT_FORMAT_AWQ_GEMM, WeightFormat::kAwqGemm) &&
              Same(W4JIT_FORMAT_TINYGEMM_INT4PACK,
                   WeightFormat::kTinygemmInt4Pack));
static_assert(Same(W4JIT_ZP_INTEGER, ZeroPointDomain::kInteger) &&
              Same(W4JIT_ZP_FLOAT, ZeroPointDomain::kFloat));
static_assert(Same(W4JIT_ACT_NONE, Activation::kNone) &&
              Same(W4JIT_ACT_RELU, Activation::kRelu) &&
              Same(W4JIT_ACT_SIGMOID, Activation::kSigmoid) &&
              Same(W4JIT_ACT_GELU_TANH, Activation::kGeluTanh) &&
              Same(W4JIT_ACT_GELU_ERF, Activation::kGeluErf) &&
              Same(W4JIT_ACT_SILU, Activation::kSilu) &&
              Same(W4JIT_ACT_SWIGLUOAI, Activation::kSwigluOai));
static_assert(Same(W4JIT_COMPUTE_SCALAR, ComputeOp::kScalar) &&
              Same(W4JIT_COMPUTE_F32_FMA, ComputeOp::kF32Fma) &&
              Same(W4JIT_COMPUTE_BF16_DOT, ComputeOp::kBf16Dot) &&
              Same(W4JIT_COMPUTE_INT8_DOT, ComputeOp::kInt8Dot) &&
              Same(W4JIT_COMPUTE_AMX_BF16, ComputeOp::kAmxBf16) &&
              Same(W4JIT_COMPUTE_AMX_INT8, ComputeOp::kAmxInt8));
static_assert(Same(W4JIT_BINARY_MUL, BinaryOp::kMul) &&
              Same(W4JIT_BINARY_ADD, BinaryOp::kAdd));

}  // namespace
}  // namespace w4jit::internal
