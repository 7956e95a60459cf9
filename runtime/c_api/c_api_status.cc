#include "runtime/c_api/c_api_status.h"

#include <utility>

namespace w4jit::internal {
namespace {
thread_local std::string last_error;
}  // namespace

w4jit_status CApiFail(w4jit_status code, std::string message) {
  last_error = std::move(message);
  return code;
}

w4jit_status CApiFromStatus(const absl::Status& s) {
  if (s.ok()) {
    last_error.clear();
    return W4JIT_OK;
  }
  w4jit_status code = W4JIT_INTERNAL;
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      code = W4JIT_INVALID_ARGUMENT;
      break;
    case absl::StatusCode::kUnimplemented:
      code = W4JIT_UNIMPLEMENTED;
      break;
    case absl::StatusCode::kFailedPrecondition:
      code = W4JIT_FAILED_PRECONDITION;
      break;
    case absl::StatusCode::kResourceExhausted:
      code = W4JIT_RESOURCE_EXHAUSTED;
      break;
    default:
      break;
  }
  return CApiFail(code, std::string(s.message()));
}

const std::string& CApiLastError() { return last_error; }

void CApiClearError() { last_error.clear(); }

WeightsView ToCppWeights(const w4jit_weights& w) {
  WeightsView out;
  out.format = static_cast<WeightFormat>(RawEnum(w.format));
  out.qweight = w.qweight;
  out.scales = w.scales;
  out.zero_points = w.zero_points;
  out.g_idx = w.g_idx;
  out.bias = w.bias;
  out.groups_major = w.groups_major != 0;
  return out;
}

}  // namespace w4jit::internal
