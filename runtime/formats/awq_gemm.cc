// AutoAWQ GEMM checkpoints:
//   qweight int32 [K, N/8], packed along N with an interleave: column
//           8j + c of row k sits at nibble kPos[c] of word (k, j);
//   qzeros  int32 [G, N/8], same interleave, zeros stored as is;
//   scales  [G, N].
// AWQ is asymmetric in practice; an s4 layer (no qzeros) means z = 8.
#include "runtime/formats/common.h"

namespace w4jit::internal {
namespace {

constexpr WeightFormat kFormat = WeightFormat::kAwqGemm;

// AutoAWQ packs columns in the order [0, 2, 4, 6, 1, 3, 5, 7] into nibbles
// 0..7; this is the inverse: the nibble that holds column c.
constexpr int kPos[8] = {0, 4, 1, 5, 2, 6, 3, 7};

}  // namespace

absl::Status ImportAwqGemm(const LayerDesc& desc, const WeightsView& v,
                           CanonicalWeights* w) {
  if (absl::Status s = RequireMultipleOf8("N", desc.n, kFormat,
                                          "qweight and qzeros packed along N");
      !s.ok()) {
    return s;
  }
  const int64_t words_per_row = w->n / 8;
  w->u.resize(static_cast<size_t>(w->n * w->k));
  for (int64_t k = 0; k < w->k; ++k) {
    for (int64_t n = 0; n < w->n; ++n) {
      w->u[n * w->k + k] =
          GetNibble(v.qweight, k * words_per_row + n / 8, kPos[n % 8]);
    }
  }
  ReadScales(desc, v.scales, GroupLayout::kGroupsMajor, w);
  if (desc.weight_type == WeightType::kU4) {
    ReadZerosAlongN(v.zero_points, kPos, 0, w);
  }
  return absl::OkStatus();
}

absl::Status ExportAwqGemm(const LayerDesc& desc, const CanonicalWeights& w,
                           OwnedCheckpoint* ckpt) {
  if (absl::Status s = RequireMultipleOf8("N", desc.n, kFormat,
                                          "qweight and qzeros packed along N");
      !s.ok()) {
    return s;
  }
  const int64_t words_per_row = w.n / 8;
  ckpt->qweight.assign(static_cast<size_t>(w.k * words_per_row) * 4, 0);
  for (int64_t k = 0; k < w.k; ++k) {
    for (int64_t n = 0; n < w.n; ++n) {
      SetNibble(&ckpt->qweight, k * words_per_row + n / 8, kPos[n % 8],
                w.U(n, k));
    }
  }
  if (desc.weight_type == WeightType::kU4) {
    ckpt->zero_points = WriteZerosAlongN(w, kPos, 0);
  }
  return WriteScales(desc, w, GroupLayout::kGroupsMajor, &ckpt->scales);
}

}  // namespace w4jit::internal
