#include "perf/lib/output_check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "runtime/reference.h"

namespace w4jit::perf {
namespace {

using internal::CanonicalWeights;

// `count` distinct indices in [0, total): the first and last `edge` (where
// kernels have their tails) and an even spread between them.
std::vector<int64_t> Sample(int64_t total, int count, int edge) {
  std::vector<int64_t> idx;
  if (total <= count) {
    for (int64_t i = 0; i < total; ++i) idx.push_back(i);
    return idx;
  }
  for (int64_t i = 0; i < edge; ++i) {
    idx.push_back(i);
    idx.push_back(total - 1 - i);
  }
  const int middle = count - 2 * edge;
  for (int i = 0; i < middle; ++i) {
    idx.push_back(edge + (total - 2 * edge) * (2 * i + 1) / (2 * middle));
  }
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  return idx;
}

// One bf16 ulp at |v|: 2^(exponent - 8) for v = f * 2^exponent.
double Bf16Ulp(double v) {
  if (v == 0.0 || !std::isfinite(v)) return 0.0;
  int exponent = 0;
  std::frexp(v, &exponent);
  return std::ldexp(1.0, exponent - 8);
}

// The reference's f32 result and the magnitude T of its terms, which
// scales the tolerance (the same definition as tests/util/test_layer.h):
//   DA8W4: T = |sa| * sum_g |s[g,n] * acc_g| + |bias|
//   W4A16: T = sum_g |s[g,n]| * sum_{k in g} |(u - z) * x| + |bias|
struct Expected {
  double value;
  double magnitude;
};

Expected W4a16Expected(const LayerDesc& desc, const CanonicalWeights& w,
                       const void* x_row, int64_t n) {
  Expected e{internal::W4a16OutputRef(w, x_row, desc.act_dtype, n), 0.0};
  for (int64_t g = 0; g < w.groups; ++g) {
    double partial = 0.0;
    for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
      partial += std::fabs(
          (static_cast<int>(w.U(n, k)) - w.Z(n, g)) *
          static_cast<double>(internal::LoadAsF32(x_row, desc.act_dtype, k)));
    }
    e.magnitude += std::fabs(w.S(n, g)) * partial;
  }
  return e;
}

Expected Da8w4Expected(const CanonicalWeights& w,
                       const internal::QuantizedRow& row, int64_t n,
                       std::vector<int32_t>* acc) {
  Expected e{internal::Da8w4OutputRef(w, row, n), 0.0};
  internal::Da8w4GroupAccRef(w, row, n, acc->data());
  for (int64_t g = 0; g < w.groups; ++g) {
    e.magnitude += std::fabs(static_cast<double>(w.S(n, g)) * (*acc)[g]);
  }
  e.magnitude *= std::fabs(row.scale);
  return e;
}

// numerics.md: 1e-5 * T + 1e-6, plus 2^-8 * T where W4A16 may round f32
// activations to bf16, plus one bf16 ulp for bf16 outputs.
double Tolerance(const LayerDesc& desc, const Expected& e) {
  double tol = 1e-5 * e.magnitude + 1e-6;
  if (desc.mode == Mode::kW4A16 && desc.act_dtype == DType::kF32 &&
      desc.allow_bf16_compute) {
    tol += std::ldexp(e.magnitude, -8);
  }
  if (desc.out_dtype == DType::kBF16) tol += Bf16Ulp(std::fabs(e.value) + tol);
  return tol;
}

}  // namespace

absl::Status CheckLayerOutput(const LayerDesc& desc, const CanonicalWeights& w,
                              int64_t m, const void* x, int64_t ldx,
                              const void* y, int64_t ldy,
                              const CheckOptions& options) {
  const size_t x_size = internal::DTypeSize(desc.act_dtype);
  const size_t y_size = internal::DTypeSize(desc.out_dtype);
  int64_t wrong = 0;
  std::string first;
  std::vector<int32_t> acc(w.groups);
  for (int64_t r : Sample(m, options.max_rows, 2)) {
    const void* x_row = static_cast<const uint8_t*>(x) + r * ldx * x_size;
    const void* y_row = static_cast<const uint8_t*>(y) + r * ldy * y_size;
    internal::QuantizedRow qrow;
    if (desc.mode == Mode::kDA8W4) {
      qrow = internal::QuantizeRowRef(x_row, desc.act_dtype, w.k, w.group_size);
    }
    for (int64_t n : Sample(w.n, options.max_cols, 16)) {
      Expected e = desc.mode == Mode::kDA8W4 ? Da8w4Expected(w, qrow, n, &acc)
                                             : W4a16Expected(desc, w, x_row, n);
      if (!w.bias.empty()) e.magnitude += std::fabs(w.bias[n]);
      const double tolerance = Tolerance(desc, e);
      const double got = internal::LoadAsF32(y_row, desc.out_dtype, n);
      // NaN compares false, so a NaN output is counted as wrong.
      if (std::fabs(got - e.value) <= tolerance) continue;
      if (wrong++ == 0) {
        first =
            absl::StrFormat("y[%d, %d] = %.8g, reference %.8g (tolerance %.3g)",
                            r, n, got, e.value, tolerance);
      }
    }
  }
  if (wrong == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat(
      "%d sampled outputs differ from the reference; first: %s", wrong, first));
}

}  // namespace w4jit::perf
