// zentorch repacked int32 [N, K/8]: element (n, k) at nibble k % 8 of word
// (n, k / 8), i.e. the bytes are an s4 [N, K/2] stream with even k in the
// low nibble. Scales and int8 zero points as for unpacked int8 ([G, N] or
// [N, G] by groups_major).
//
// For s4 layers a nibble is a two's-complement q in [-8, 7], so u = q + 8 =
// nibble ^ 8. zentorch itself packs only signed values; for u4 layers we
// read the nibbles as unsigned 0..15 (u = nibble), which is the only
// reading under which every u4 value fits, and the exporter writes the
// same. Float zero points (ZeroPointDomain::kFloat) are [G, N] or [N, G]
// too, in LayerDesc::zero_point_dtype.
#include "runtime/formats/common.h"

namespace w4jit::internal {
namespace {

constexpr WeightFormat kFormat = WeightFormat::kZentorchInt32;

uint8_t Flip(const LayerDesc& desc) {
  return desc.weight_type == WeightType::kU4 ? 0 : 8;
}

}  // namespace

absl::Status ImportZentorchInt32(const LayerDesc& desc, const WeightsView& v,
                                 CanonicalWeights* w) {
  if (absl::Status s =
          RequireMultipleOf8("K", w->k, kFormat, "qweight packed along K");
      !s.ok()) {
    return s;
  }
  ReadPackedAlongK(v.qweight, Flip(desc), w);
  ReadScales(desc, v.scales, GroupLayoutOf(v.groups_major), w);
  if (desc.weight_type == WeightType::kU4) {
    return ReadZeroPoints(desc, v.zero_points, GroupLayoutOf(v.groups_major),
                          w);
  }
  return absl::OkStatus();
}

absl::Status ExportZentorchInt32(const LayerDesc& desc,
                                 const CanonicalWeights& w,
                                 OwnedCheckpoint* ckpt) {
  if (absl::Status s =
          RequireMultipleOf8("K", w.k, kFormat, "qweight packed along K");
      !s.ok()) {
    return s;
  }
  ckpt->qweight = WritePackedAlongK(w, Flip(desc));
  const GroupLayout layout = GroupLayoutOf(ckpt->groups_major);
  if (desc.weight_type == WeightType::kU4) {
    if (absl::Status s = WriteZeroPoints(desc, w, layout, &ckpt->zero_points);
        !s.ok()) {
      return s;
    }
  }
  return WriteScales(desc, w, layout, &ckpt->scales);
}

}  // namespace w4jit::internal
