// AutoGPTQ / GPTQModel "gptq" checkpoints, v1 and v2:
//   qweight int32 [K/8, N], packed along K: element (k, n) at nibble k % 8
//           of word (k / 8, n), values u in 0..15;
//   qzeros  int32 [G, N/8], packed along N in natural order: element (g, n)
//           at nibble n % 8 of word (g, n / 8); v1 stores zero - 1 (read
//           back as (stored + 1) & 0xF), v2 the zero itself;
//   scales  [G, N];
//   g_idx   int32 [K], optional: act-order, handled for every format in
//           import.cc (runtime/formats/act_order.h).
// Symmetric (s4) layers: pass no qzeros. GPTQ's symmetric zero is 8
// (stored as 7 in v1), which is exactly the canonical s4 form u = q + 8,
// z = 8; a checkpoint that does store qzeros can be imported as u4 instead.
#include "absl/strings/str_format.h"
#include "runtime/formats/common.h"

namespace w4jit::internal {
namespace {

constexpr int kNaturalOrder[8] = {0, 1, 2, 3, 4, 5, 6, 7};

// v1's "zero - 1" convention.
uint8_t ZeroOffset(WeightFormat f) {
  return f == WeightFormat::kGptqV1 ? 1 : 0;
}

absl::Status CheckShape(const LayerDesc& desc, WeightFormat format) {
  if (absl::Status s =
          RequireMultipleOf8("K", desc.k, format, "qweight packed along K");
      !s.ok()) {
    return s;
  }
  if (desc.weight_type == WeightType::kU4) {
    return RequireMultipleOf8("N", desc.n, format, "qzeros packed along N");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ImportGptq(const LayerDesc& desc, const WeightsView& v,
                        CanonicalWeights* w) {
  if (absl::Status s = CheckShape(desc, v.format); !s.ok()) return s;
  w->u.resize(static_cast<size_t>(w->n * w->k));
  for (int64_t k = 0; k < w->k; ++k) {
    for (int64_t n = 0; n < w->n; ++n) {
      w->u[n * w->k + k] = GetNibble(v.qweight, (k / 8) * w->n + n, k % 8);
    }
  }
  ReadScales(desc, v.scales, GroupLayout::kGroupsMajor, w);
  if (desc.weight_type == WeightType::kU4) {
    ReadZerosAlongN(v.zero_points, kNaturalOrder, ZeroOffset(v.format), w);
  }
  return absl::OkStatus();
}

absl::Status ExportGptq(const LayerDesc& desc, const CanonicalWeights& w,
                        OwnedCheckpoint* ckpt) {
  if (absl::Status s = CheckShape(desc, ckpt->format); !s.ok()) return s;
  ckpt->qweight.assign(static_cast<size_t>(w.k / 8 * w.n) * 4, 0);
  for (int64_t k = 0; k < w.k; ++k) {
    for (int64_t n = 0; n < w.n; ++n) {
      SetNibble(&ckpt->qweight, (k / 8) * w.n + n, k % 8, w.U(n, k));
    }
  }
  if (desc.weight_type == WeightType::kU4) {
    ckpt->zero_points =
        WriteZerosAlongN(w, kNaturalOrder, ZeroOffset(ckpt->format));
  }
  return WriteScales(desc, w, GroupLayout::kGroupsMajor, &ckpt->scales);
}

}  // namespace w4jit::internal
