#include "runtime/gate_up_interleave.h"

#include <algorithm>
#include <cstdint>

namespace w4jit::internal {

CanonicalWeights InterleaveGateUp(const CanonicalWeights& w, int unit) {
  const int64_t h = w.n / 2;
  const int64_t runs = (h + unit - 1) / unit;
  CanonicalWeights out;
  out.n = 2 * unit * runs;
  out.k = w.k;
  out.group_size = w.group_size;
  out.groups = w.groups;
  out.asymmetric = w.asymmetric;
  // Padding columns: u = 0 and scale 0, so every kernel computes 0; the
  // zero point stays what the kernels assume for s4 (8).
  out.u.assign(static_cast<size_t>(out.n * out.k), 0);
  out.scales.assign(static_cast<size_t>(out.n * out.groups), 0.0f);
  out.zeros.assign(static_cast<size_t>(out.n * out.groups),
                   w.asymmetric ? 0 : 8);
  if (!w.bias.empty()) out.bias.assign(static_cast<size_t>(out.n), 0.0f);
  // Float zero points: 0 in the padding too.
  if (w.float_zero()) {
    out.float_zeros.assign(static_cast<size_t>(out.n * out.groups), 0.0f);
  }
  for (int64_t p = 0; p < out.n; ++p) {
    const int64_t run = p / (2 * unit), l = p % (2 * unit);
    const int64_t j = run * unit + (l % unit);  // output column
    if (j >= h) continue;
    const int64_t src = l < unit ? j : h + j;
    std::copy_n(w.u.begin() + src * w.k, w.k, out.u.begin() + p * w.k);
    std::copy_n(w.scales.begin() + src * w.groups, w.groups,
                out.scales.begin() + p * w.groups);
    std::copy_n(w.zeros.begin() + src * w.groups, w.groups,
                out.zeros.begin() + p * w.groups);
    if (w.float_zero()) {
      std::copy_n(w.float_zeros.begin() + src * w.groups, w.groups,
                  out.float_zeros.begin() + p * w.groups);
    }
    if (!w.bias.empty()) out.bias[p] = w.bias[src];
  }
  return out;
}

}  // namespace w4jit::internal
