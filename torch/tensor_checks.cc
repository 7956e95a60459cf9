#include "torch/tensor_checks.h"

#include <sstream>

namespace w4jit::torch_ext {

std::string ShapeString(const at::Tensor& t) {
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

void CheckCpu(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.device().is_cpu(), op, ": ", name, " is on device ",
              t.device().str(), " but must be on the CPU");
  TORCH_CHECK(t.layout() == at::kStrided, op, ": ", name,
              " must be a dense (strided) tensor");
}

void CheckDim(const char* op, const char* name, const at::Tensor& t,
              int64_t dim) {
  TORCH_CHECK(t.dim() == dim, op, ": ", name, " has shape ", ShapeString(t),
              " (", t.dim(), " dims) but must have ", dim, " dims");
}

void CheckDType(const char* op, const char* name, const at::Tensor& t,
                std::initializer_list<at::ScalarType> allowed) {
  for (at::ScalarType a : allowed) {
    if (t.scalar_type() == a) return;
  }
  std::ostringstream want;
  const char* sep = "";
  for (at::ScalarType a : allowed) {
    want << sep << c10::toString(a);
    sep = " or ";
  }
  TORCH_CHECK(false, op, ": ", name, " has dtype ",
              c10::toString(t.scalar_type()), " but must be ", want.str());
}

void CheckSize(const char* op, const char* name, const at::Tensor& t, int64_t d,
               int64_t want, const char* why) {
  TORCH_CHECK(t.size(d) == want, op, ": ", name, " has shape ", ShapeString(t),
              ": dim ", d, " is ", t.size(d), " but must be ", want, " (", why,
              ")");
}

DType ToDType(at::ScalarType t) {
  switch (t) {
    case at::kBFloat16:
      return DType::kBF16;
    case at::kHalf:
      return DType::kF16;
    default:
      return DType::kF32;
  }
}

at::ScalarType ToScalarType(DType t) {
  switch (t) {
    case DType::kBF16:
      return at::kBFloat16;
    case DType::kF16:
      return at::kHalf;
    default:
      return at::kFloat;
  }
}

at::Tensor LayerBias(const at::Tensor& bias) {
  if (bias.scalar_type() == at::kHalf) return bias.to(at::kFloat);
  return bias.contiguous();
}

}  // namespace w4jit::torch_ext
