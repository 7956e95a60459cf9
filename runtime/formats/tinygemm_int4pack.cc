// torch's CPU int4pack layouts, the weights of torchao's int4 weight-only
// ("tinygemm") checkpoints (torch._convert_weight_to_int4pack_for_cpu(w
// int32 [N, K], inner_k_tiles) -> uint8 [N, K/2]; aten/src/ATen/native/cpu/
// int4mm_kernel.cpp, weight_to_int4pack_kernel). torch packs for its own
// kernels' CPU capability, so the bytes depend on the machine (and on
// ATEN_CPU_CAPABILITY) where they were packed:
//
//   rows in blocks of B = 64 (AVX512) or 32 (AVX2, DEFAULT); block b
//   starts at byte b * B * K / 2 and holds its rows' K columns k-major,
//   nb / 2 bytes per k for a block of nb rows (nb = B but for the last
//   block, which holds N % B rows when B does not divide N):
//     AVX512, nb = 64: byte k * 32 + j = row j | row j + 32 << 4 (j < 32;
//                      so byte d holds rows d and d + 32, byte 16 + d rows
//                      d + 16 and d + 48)
//     AVX2,   nb = 32: byte k * 16 + j = row j | row j + 16 << 4
//     otherwise (DEFAULT, and every last block with nb < B):
//                      byte k * nb / 2 + j = row 2j | row 2j + 1 << 4
//   (rows counted within the block; row r's value in the low nibble when
//   r is the first of its byte). N % 16 == 0 and K even, as torch checks.
//   Values u in [0, 15].
//
// The layer format WeightFormat::kTinygemmInt4Pack is the AVX512 one (what
// the public header promises); the torch op woq_repack_from_int4pack reads
// the one of the capability of the torch it runs in.
//   scales, zero points [G, N] (torchao's scales_and_zeros [G, N, 2]
//           split in two), LayerDesc::scale_dtype and zero_point_dtype;
//           float zero points: w = (u - 8) * s + z.
#include "runtime/formats/tinygemm_int4pack.h"

#include <algorithm>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "runtime/formats/common.h"

namespace w4jit::internal {
namespace {

constexpr Int4PackBlocking kLayerFormatBlocking = Int4PackBlocking::kAvx512;

absl::Status CheckShape(const LayerDesc& desc) {
  if (absl::Status s = CheckInt4PackShape(desc.n, desc.k); !s.ok()) return s;
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

}  // namespace

int64_t BlockRows(Int4PackBlocking blocking) {
  return blocking == Int4PackBlocking::kAvx512 ? 64 : 32;
}

absl::StatusOr<Int4PackBlocking> Int4PackBlockingFor(
    std::string_view capability) {
  std::string upper(capability);
  absl::AsciiStrToUpper(&upper);
  if (upper == "AVX512") return Int4PackBlocking::kAvx512;
  if (upper == "AVX2") return Int4PackBlocking::kAvx2;
  if (upper == "DEFAULT") return Int4PackBlocking::kDefault;
  return absl::InvalidArgumentError(absl::StrFormat(
      "torch's CPU capability '%s' has no int4pack layout w4jit reads "
      "(known: AVX512, 64-row blocks; AVX2, 32-row blocks; DEFAULT, "
      "adjacent-row pairs)",
      std::string(capability)));
}

absl::Status CheckInt4PackShape(int64_t n, int64_t k) {
  if (n <= 0 || n % 16 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "N = %d is not a positive multiple of 16, which torch's CPU "
        "int4pack (the tinygemm-int4pack format) needs",
        n));
  }
  if (k <= 0 || k % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "K = %d is not a positive even number; torch's CPU int4pack (the "
        "tinygemm-int4pack format) holds 2 k per byte",
        k));
  }
  return absl::OkStatus();
}

Int4PackPlace Int4PackPlaceOf(Int4PackBlocking blocking, int64_t n_total,
                              int64_t k_total, int64_t n, int64_t k) {
  const int64_t rows = BlockRows(blocking);
  const int64_t block = n / rows;
  const int64_t r = n % rows;
  const int64_t nb = std::min(rows, n_total - block * rows);
  const int64_t base = block * rows * k_total / 2 + k * nb / 2;
  if (nb == rows && blocking != Int4PackBlocking::kDefault) {
    // Split halves: byte j = row j | row j + nb/2 << 4.
    const int64_t half = nb / 2;
    return {base + r % half, r >= half ? 1 : 0};
  }
  // Adjacent pairs: byte j = row 2j | row 2j + 1 << 4.
  return {base + r / 2, static_cast<int>(r % 2)};
}

void UnpackTinygemmInt4Pack(const uint8_t* packed, int64_t n, int64_t k,
                            Int4PackBlocking blocking, uint8_t* u) {
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t col = 0; col < k; ++col) {
      const Int4PackPlace p = Int4PackPlaceOf(blocking, n, k, row, col);
      u[row * k + col] =
          static_cast<uint8_t>((packed[p.byte] >> (4 * p.nibble)) & 0xF);
    }
  }
}

void PackTinygemmInt4Pack(const uint8_t* u, int64_t n, int64_t k,
                          Int4PackBlocking blocking, uint8_t* packed) {
  for (int64_t i = 0; i < n * k / 2; ++i) packed[i] = 0;
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t col = 0; col < k; ++col) {
      const Int4PackPlace p = Int4PackPlaceOf(blocking, n, k, row, col);
      packed[p.byte] |=
          static_cast<uint8_t>((u[row * k + col] & 0xF) << (4 * p.nibble));
    }
  }
}

absl::Status ImportTinygemmInt4Pack(const LayerDesc& desc, const WeightsView& v,
                                    CanonicalWeights* w) {
  if (absl::Status s = CheckShape(desc); !s.ok()) return s;
  w->u.resize(static_cast<size_t>(w->n * w->k));
  UnpackTinygemmInt4Pack(static_cast<const uint8_t*>(v.qweight), w->n, w->k,
                         kLayerFormatBlocking, w->u.data());
  ReadScales(desc, v.scales, GroupLayout::kGroupsMajor, w);
  return ReadFloatZeroPoints(desc, v.zero_points, GroupLayout::kGroupsMajor, w);
}

absl::Status ExportTinygemmInt4Pack(const LayerDesc& desc,
                                    const CanonicalWeights& w,
                                    OwnedCheckpoint* ckpt) {
  if (absl::Status s = CheckShape(desc); !s.ok()) return s;
  ckpt->qweight.assign(static_cast<size_t>(w.n * w.k / 2), 0);
  PackTinygemmInt4Pack(w.u.data(), w.n, w.k, kLayerFormatBlocking,
                       ckpt->qweight.data());
  if (absl::Status s = WriteFloatZeroPoints(desc, w, GroupLayout::kGroupsMajor,
                                            &ckpt->zero_points);
      !s.ok()) {
    return s;
  }
  return WriteScales(desc, w, GroupLayout::kGroupsMajor, &ckpt->scales);
}

}  // namespace w4jit::internal
