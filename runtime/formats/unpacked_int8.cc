// Unpacked int8: qweight int8 [N, K], one value per element: s4 in [-8, 7]
// or, for u4 layers, u4 in [0, 15]. Scales and int8 zero points are [G, N]
// (groups_major) or [N, G]; float zero points likewise, in
// LayerDesc::zero_point_dtype. This is what zentorch_woq_repack_weight takes.
#include "absl/strings/str_format.h"
#include "runtime/formats/common.h"

namespace w4jit::internal {

absl::Status ImportUnpackedInt8(const LayerDesc& desc, const WeightsView& v,
                                CanonicalWeights* w) {
  const bool u4 = desc.weight_type == WeightType::kU4;
  // Canonical u = q + 8 for s4, the value itself for u4.
  const int lo = u4 ? 0 : -8;
  const int offset = -lo;
  const int8_t* q = static_cast<const int8_t*>(v.qweight);
  w->u.resize(static_cast<size_t>(w->n * w->k));
  for (int64_t i = 0; i < w->n * w->k; ++i) {
    const int value = q[i];
    if (value < lo || value > lo + 15) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "qweight[n = %d, k = %d] = %d is outside [%d, %d] (%s weights)",
          i / w->k, i % w->k, value, lo, lo + 15, ToString(desc.weight_type)));
    }
    w->u[i] = static_cast<uint8_t>(value + offset);
  }
  ReadScales(desc, v.scales, GroupLayoutOf(v.groups_major), w);
  if (u4) {
    return ReadZeroPoints(desc, v.zero_points, GroupLayoutOf(v.groups_major),
                          w);
  }
  return absl::OkStatus();
}

absl::Status ExportUnpackedInt8(const LayerDesc& desc,
                                const CanonicalWeights& w,
                                OwnedCheckpoint* ckpt) {
  const bool u4 = desc.weight_type == WeightType::kU4;
  const int offset = u4 ? 0 : 8;
  ckpt->qweight.resize(w.u.size());
  for (size_t i = 0; i < w.u.size(); ++i) {
    ckpt->qweight[i] =
        static_cast<uint8_t>(static_cast<int8_t>(w.u[i] - offset));
  }
  if (u4) {
    if (absl::Status s = WriteZeroPoints(
            desc, w, GroupLayoutOf(ckpt->groups_major), &ckpt->zero_points);
        !s.ok()) {
      return s;
    }
  }
  return WriteScales(desc, w, GroupLayoutOf(ckpt->groups_major), &ckpt->scales);
}

}  // namespace w4jit::internal
