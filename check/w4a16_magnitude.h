// The magnitude of the terms a W4A16 kernel sums for one output column and
// weight group: the T that scales the tolerance (docs/numerics.md,
// Tolerances). Shared by the layer and MoE checkers.
#ifndef W4JIT_CHECK_W4A16_MAGNITUDE_H_
#define W4JIT_CHECK_W4A16_MAGNITUDE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "runtime/canonical_weights.h"

namespace w4jit::check {

// Group g of output column `row`, before the bias; abs_x(k) is |x| at
// column k in the kernels' order (after act-order). The larger of the two
// ways the kernels sum a group:
//  - (u - z) * x, scaled once: |s| * sum |u - z| |x|, plus the zero-point
//    correction the bf16-dot kernels fold out, |zc| * sum |x| (zc = zf for
//    float zero points, (8 - z) * s for integer ones, 0 for s4). Its
//    rounding does not cancel with the group's, so a column whose nibbles
//    all equal z (exactly 0) still has terms of this size;
//  - the f32 int4 kernel's byte decode (jit/w4a16_layout.h): the low
//    nibble times x[2p] - x[2p+1]/16, the whole byte times x[2p+1]/16 and
//    the zero point's share, 8 * sum x[even k] (s4) or z * sum x (u4).
//    Per k that is at most |s| * |x_k| times u + z at an even k (z = 8 for
//    s4), and u + z + 2 (u4) or |u - 8| + 2 (s4) at an odd one; plus
//    |zf| * sum |x| for float zero points (decoded as s4).
template <class AbsX>
double W4a16GroupMagnitude(const internal::CanonicalWeights& w, int64_t row,
                           int64_t g, const AbsX& abs_x) {
  const int64_t k0 = g * w.group_size;
  const double z = w.Z(row, g);
  double exact = 0.0, byte_decode = 0.0, xsum = 0.0;
  for (int64_t k = k0; k < k0 + w.group_size; ++k) {
    const double ax = abs_x(k);
    const double u = w.U(row, k);
    exact += std::fabs(u - z) * ax;
    const bool odd = (k - k0) % 2 == 1;
    const double c = !odd           ? u + z
                     : w.asymmetric ? u + z + 2.0
                                    : std::fabs(u - 8.0) + 2.0;
    byte_decode += c * ax;
    xsum += ax;
  }
  const double s = std::fabs(static_cast<double>(w.S(row, g)));
  const double zf =
      w.float_zero() ? std::fabs(static_cast<double>(w.FZ(row, g))) : 0.0;
  const double fold = w.float_zero() ? zf : std::fabs((8.0 - z) * s);
  return std::max(s * exact + fold * xsum, s * byte_decode + zf * xsum);
}

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_W4A16_MAGNITUDE_H_
