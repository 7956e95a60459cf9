// The one internal form every checkpoint format is imported into. Kernels
// pack from this; the reference computes from it directly.
#ifndef W4JIT_RUNTIME_CANONICAL_WEIGHTS_H_
#define W4JIT_RUNTIME_CANONICAL_WEIGHTS_H_

#include <cstdint>
#include <vector>

namespace w4jit::internal {

struct CanonicalWeights {
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 0;  // resolved: K for per-channel, always > 0
  int64_t groups = 0;      // K / group_size
  // True for u4 layers (zero points given by the checkpoint). For s4 the
  // zero points below are all 8 so that u - z == q for every kernel.
  bool asymmetric = false;
  // Unsigned nibble values u[n*K + k] in [0, 15] (s4 stores q + 8).
  std::vector<uint8_t> u;
  // Scales s[n*G + g], widened exactly to f32.
  std::vector<float> scales;
  // Zero points z[n*G + g] in [0, 15]; all 8 in the float zero-point
  // domain, whose zeros live in float_zeros.
  std::vector<uint8_t> zeros;
  // Float zero points zf[n*G + g] widened exactly to f32 (numerics.md:
  // w = (u - 8) * s + zf); empty in the integer domain.
  std::vector<float> float_zeros;
  // Bias[n] widened to f32; empty if the layer has no bias.
  std::vector<float> bias;
  // GPTQ act-order: column j of u (and of every kernel's view of x) is the
  // checkpoint's input channel k_perm[j], so that each group's members are
  // the contiguous columns [g * group_size, (g + 1) * group_size) although
  // the checkpoint's g_idx scatters them. Kernels read x[k_perm[j]] where
  // they would read x[j]. Empty: the identity (no g_idx, or one in order).
  std::vector<int32_t> k_perm;

  uint8_t U(int64_t row, int64_t col) const { return u[row * k + col]; }
  float S(int64_t row, int64_t g) const { return scales[row * groups + g]; }
  uint8_t Z(int64_t row, int64_t g) const { return zeros[row * groups + g]; }
  bool float_zero() const { return !float_zeros.empty(); }
  float FZ(int64_t row, int64_t g) const {
    return float_zeros[row * groups + g];
  }
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_CANONICAL_WEIGHTS_H_
