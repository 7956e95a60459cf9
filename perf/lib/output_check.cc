#include "perf/lib/output_check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "check/layer_check.h"
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
    std::vector<uint8_t> permuted;  // act-order: x as the kernels read it
    const void* x_row =
        internal::ActOrderRow(static_cast<const uint8_t*>(x) + r * ldx * x_size,
                              desc.act_dtype, w.k_perm, &permuted);
    const void* y_row = static_cast<const uint8_t*>(y) + r * ldy * y_size;
    internal::QuantizedRow qrow;
    if (desc.mode == Mode::kDA8W4) {
      qrow = internal::QuantizeRowRef(x_row, desc.act_dtype, w.k, w.group_size,
                                      desc.act_per_group());
    }
    for (int64_t n : Sample(w.n, options.max_cols, 16)) {
      const check::Expected e =
          check::ExpectedAt(desc, w, x_row, qrow, n, acc.data());
      const double tolerance = check::Tolerance(desc, e);
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
