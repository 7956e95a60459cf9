#include "runtime/da8w4/da8w4_pack.h"

#include "runtime/scale_storage.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/work_split.h"

namespace w4jit::internal {

Da8w4Layout MakeDa8w4Layout(const CanonicalWeights& w, int lanes,
                            bool scales_16bit, bool f16_ok) {
  Da8w4Layout layout;
  layout.lanes = lanes;
  layout.n = w.n;
  layout.k = w.k;
  layout.group_size = w.group_size;
  if (scales_16bit) {
    ScaleDtypeChooser chooser(f16_ok);
    for (size_t i = 0; chooser.AnyNarrow() && i < w.scales.size(); ++i) {
      chooser.See(w.scales[i]);
    }
    layout.scale_dtype = chooser.Result();
  }
  return layout;
}

namespace {

// Weights, scales, zero points and bias of blocks [b0, b1).
void PackBlocks(const CanonicalWeights& w, const Da8w4Layout& lay, int64_t b0,
                int64_t b1, Da8w4Packed* out) {
  const int lanes = lay.lanes;
  const int nb = lay.block_cols();
  const int64_t kq = lay.k_quads();
  const int64_t groups = lay.groups();
  // u[n][k], or 0 in the padding.
  auto u = [&](int64_t n, int64_t k) -> uint8_t {
    return (n < w.n && k < w.k) ? w.U(n, k) : 0;
  };
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t n0 = b * nb;
    uint8_t* dst = out->weights.data() + b * lay.block_weight_bytes();
    for (int64_t q = 0; q < kq; ++q) {
      for (int c = 0; c < lanes; ++c) {
        for (int i = 0; i < 4; ++i) {
          const int64_t k = 4 * q + i;
          *dst++ =
              static_cast<uint8_t>(u(n0 + c, k) | (u(n0 + lanes + c, k) << 4));
        }
      }
    }
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t at = (b * groups + g) * nb;
      for (int c = 0; c < nb; ++c) {
        const int64_t n = n0 + c;
        StoreScale(out->scales.data(), at + c, n < w.n ? w.S(n, g) : 0.0f,
                   lay.scale_dtype);
        if (!out->zeros.empty()) out->zeros[at + c] = n < w.n ? w.Z(n, g) : 0;
      }
    }
    if (!out->bias.empty()) {
      for (int c = 0; c < nb; ++c) {
        const int64_t n = n0 + c;
        out->bias[n0 + c] = n < w.n ? w.bias[n] : 0.0f;
      }
    }
  }
}

}  // namespace

Da8w4Packed PackDa8w4(const CanonicalWeights& w, const Da8w4Layout& layout,
                      int64_t m1_align) {
  Da8w4Packed out;
  out.layout = layout;
  const int64_t blocks = layout.blocks();
  const int64_t nb = layout.block_cols();
  out.weights.resize(static_cast<size_t>(blocks * layout.block_weight_bytes()));
  out.scales.resize(static_cast<size_t>(blocks * layout.block_scale_bytes()));
  if (w.asymmetric) {
    out.zeros.resize(static_cast<size_t>(blocks * layout.groups() * nb));
  }
  if (!w.bias.empty()) out.bias.resize(static_cast<size_t>(blocks * nb));
  const int parts = SmallMParts(blocks, Concurrency(), m1_align);
  ParallelRun(parts, [&](int c) {
    const Range r = SplitRange(blocks, parts, c, m1_align);
    PackBlocks(w, layout, r.begin, r.end, &out);
  });
  return out;
}

}  // namespace w4jit::internal
