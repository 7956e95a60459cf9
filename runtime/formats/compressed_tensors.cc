// compressed-tensors `pack_quantized` (llm-compressor W4A16 / W4A16_ASYM):
//   weight_packed     int32 [N, K/8], element (n, k) at nibble k % 8 of word
//                     (n, k / 8), stored q + 8 (0..15);
//   weight_scale      [N, G];
//   weight_zero_point int32 [N/8, G] (u4 only), packed along N: element
//                     (n, g) at nibble n % 8 of word (n / 8, g), stored zp + 8.
// Dequant (stored_q - stored_zp) * s, so canonical u = stored_q and
// z = stored_zp (u - z == q - zp); s4 layers have z = 8 implicitly.
#include "runtime/formats/common.h"

namespace w4jit::internal {
namespace {

constexpr WeightFormat kFormat = WeightFormat::kCompressedTensors;

absl::Status CheckShape(const LayerDesc& desc) {
  if (absl::Status s = RequireMultipleOf8("K", desc.k, kFormat,
                                          "weight_packed packed along K");
      !s.ok()) {
    return s;
  }
  if (desc.weight_type == WeightType::kU4) {
    return RequireMultipleOf8("N", desc.n, kFormat,
                              "weight_zero_point packed along N");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ImportCompressedTensors(const LayerDesc& desc,
                                     const WeightsView& v,
                                     CanonicalWeights* w) {
  if (absl::Status s = CheckShape(desc); !s.ok()) return s;
  ReadPackedAlongK(v.qweight, 0, w);
  ReadScales(desc, v.scales, GroupLayout::kChannelsMajor, w);
  if (desc.weight_type == WeightType::kU4) {
    w->zeros.resize(static_cast<size_t>(w->n * w->groups));
    for (int64_t n = 0; n < w->n; ++n) {
      for (int64_t g = 0; g < w->groups; ++g) {
        w->zeros[n * w->groups + g] =
            GetNibble(v.zero_points, (n / 8) * w->groups + g, n % 8);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ExportCompressedTensors(const LayerDesc& desc,
                                     const CanonicalWeights& w,
                                     OwnedCheckpoint* ckpt) {
  if (absl::Status s = CheckShape(desc); !s.ok()) return s;
  ckpt->qweight = WritePackedAlongK(w, 0);
  if (desc.weight_type == WeightType::kU4) {
    ckpt->zero_points.assign(static_cast<size_t>(w.n / 8 * w.groups) * 4, 0);
    for (int64_t n = 0; n < w.n; ++n) {
      for (int64_t g = 0; g < w.groups; ++g) {
        SetNibble(&ckpt->zero_points, (n / 8) * w.groups + g, n % 8, w.Z(n, g));
      }
    }
  }
  return WriteScales(desc, w, GroupLayout::kChannelsMajor, &ckpt->scales);
}

}  // namespace w4jit::internal
