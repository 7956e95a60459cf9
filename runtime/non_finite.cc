#include "runtime/non_finite.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_format.h"
#include "base/numeric.h"

namespace w4jit::internal {
namespace {

// A float is non-finite when its exponent bits are all ones. Testing the
// bits (not std::isfinite) keeps the loop a branch-free OR that compilers
// vectorize: the check reads x once, a small part of a layer call.
template <typename Bits, Bits kExponent>
bool AllFinite(const void* row, int64_t n) {
  const Bits* p = static_cast<const Bits*>(row);
  bool bad = false;
  for (int64_t i = 0; i < n; ++i) {
    Bits v;
    std::memcpy(&v, p + i, sizeof(v));
    bad |= (v & kExponent) == kExponent;
  }
  return !bad;
}

float ElementAt(DType dtype, const void* row, int64_t i) {
  if (dtype == DType::kBF16) {
    return Bf16ToF32(static_cast<const uint16_t*>(row)[i]);
  }
  return static_cast<const float*>(row)[i];
}

}  // namespace

absl::Status ValidateNonFinitePolicy(const char* what, NonFinitePolicy policy) {
  if (policy == NonFinitePolicy::kError ||
      policy == NonFinitePolicy::kPropagate) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("%s = %d is not error (0) or propagate (1)", what,
                      static_cast<int>(policy)));
}

bool RowIsFinite(DType dtype, const void* row, int64_t n) {
  return dtype == DType::kBF16 ? AllFinite<uint16_t, 0x7F80>(row, n)
                               : AllFinite<uint32_t, 0x7F800000u>(row, n);
}

absl::Status CheckFinite(DType dtype, int64_t m, const void* x, int64_t ldx,
                         int64_t n) {
  const size_t row_bytes = static_cast<size_t>(ldx) * DTypeSize(dtype);
  for (int64_t i = 0; i < m; ++i) {
    const void* row = static_cast<const char*>(x) + i * row_bytes;
    if (RowIsFinite(dtype, row, n)) continue;
    for (int64_t j = 0; j < n; ++j) {
      const float v = ElementAt(dtype, row, j);
      if (!std::isfinite(v)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "x[%d, %d] = %g is not finite (non_finite = error)", i, j, v));
      }
    }
  }
  return absl::OkStatus();
}

void FillNaN(DType dtype, void* y, int64_t n) {
  if (dtype == DType::kBF16) {
    uint16_t* p = static_cast<uint16_t*>(y);
    for (int64_t i = 0; i < n; ++i) p[i] = 0x7FC0;
  } else {
    float* p = static_cast<float*>(y);
    for (int64_t i = 0; i < n; ++i) {
      p[i] = std::numeric_limits<float>::quiet_NaN();
    }
  }
}

}  // namespace w4jit::internal
