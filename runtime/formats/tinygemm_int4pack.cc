// torch's CPU int4pack layout, the weights of torchao's int4 weight-only
// ("tinygemm") checkpoints (torch._convert_weight_to_int4pack_for_cpu,
// aten/src/ATen/native/cpu/int4mm_kernel.cpp, weight_to_int4pack_kernel,
// as an AVX-512 build of torch writes it):
//   qweight uint8 [N, K/2], N a multiple of 64: rows in blocks of 64, each
//           block K * 32 bytes; for row r of a block (r = 16 * quarter + d)
//           and column k, byte k * 32 + 16 * (quarter % 2) + d, low nibble
//           for quarters 0 and 1, high nibble for 2 and 3. So byte d
//           (0..15) holds rows d and d + 32, byte 16 + d rows d + 16 and
//           d + 48. Values u in [0, 15].
//   scales, zero points [G, N] (torchao's scales_and_zeros [G, N, 2]
//           split in two), LayerDesc::scale_dtype and zero_point_dtype;
//           float zero points: w = (u - 8) * s + z.
// torch writes another layout on CPUs without AVX-512 (32-row blocks) and
// for a last block of fewer than 64 rows (adjacent rows share a byte);
// only the 64-row one is imported, hence N % 64 == 0.
#include "runtime/formats/tinygemm_int4pack.h"

#include "absl/strings/str_format.h"
#include "runtime/formats/common.h"

namespace w4jit::internal {
namespace {

constexpr int64_t kBlockRows = 64;

absl::Status CheckShape(const LayerDesc& desc) {
  if (desc.n % kBlockRows != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "N = %d is not a multiple of 64, which the tinygemm-int4pack format "
        "(torch's CPU int4pack, 64-row blocks) needs",
        desc.n));
  }
  if (desc.k % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "K = %d is odd; the tinygemm-int4pack format holds 2 k per byte",
        desc.k));
  }
  if (desc.weight_type != WeightType::kU4 ||
      desc.zero_point_domain != ZeroPointDomain::kFloat) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the tinygemm-int4pack format holds u4 weights with float zero "
        "points (w = (u - 8) * s + z); the layer has weight_type %s and "
        "zero_point_domain %s",
        ToString(desc.weight_type), ToString(desc.zero_point_domain)));
  }
  return absl::OkStatus();
}

// Byte offset and nibble (0 low, 1 high) of (n, k).
struct Place {
  int64_t byte;
  int nibble;
};

Place PlaceOf(int64_t k_total, int64_t n, int64_t k) {
  const int64_t block = n / kBlockRows;
  const int64_t r = n % kBlockRows;
  const int64_t quarter = r / 16;
  return {block * k_total * 32 + k * 32 + 16 * (quarter % 2) + r % 16,
          quarter >= 2 ? 1 : 0};
}

}  // namespace

void UnpackTinygemmInt4Pack(const uint8_t* packed, int64_t n, int64_t k,
                            uint8_t* u) {
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t col = 0; col < k; ++col) {
      const Place p = PlaceOf(k, row, col);
      u[row * k + col] =
          static_cast<uint8_t>((packed[p.byte] >> (4 * p.nibble)) & 0xF);
    }
  }
}

absl::Status ImportTinygemmInt4Pack(const LayerDesc& desc, const WeightsView& v,
                                    CanonicalWeights* w) {
  if (absl::Status s = CheckShape(desc); !s.ok()) return s;
  w->u.resize(static_cast<size_t>(w->n * w->k));
  UnpackTinygemmInt4Pack(static_cast<const uint8_t*>(v.qweight), w->n, w->k,
                         w->u.data());
  ReadScales(desc, v.scales, GroupLayout::kGroupsMajor, w);
  return ReadFloatZeroPoints(desc, v.zero_points, GroupLayout::kGroupsMajor, w);
}

absl::Status ExportTinygemmInt4Pack(const LayerDesc& desc,
                                    const CanonicalWeights& w,
                                    OwnedCheckpoint* ckpt) {
  if (absl::Status s = CheckShape(desc); !s.ok()) return s;
  ckpt->qweight.assign(static_cast<size_t>(w.n * w.k / 2), 0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t k = 0; k < w.k; ++k) {
      const Place p = PlaceOf(w.k, n, k);
      ckpt->qweight[p.byte] |=
          static_cast<uint8_t>(w.U(n, k) << (4 * p.nibble));
    }
  }
  if (absl::Status s = WriteFloatZeroPoints(desc, w, GroupLayout::kGroupsMajor,
                                            &ckpt->zero_points);
      !s.ok()) {
    return s;
  }
  return WriteScales(desc, w, GroupLayout::kGroupsMajor, &ckpt->scales);
}

}  // namespace w4jit::internal
