#include "runtime/w4a16/w4a16_tile_x.h"

#include <algorithm>
#include <cstring>

#include "base/numeric.h"
#include "runtime/w4a16/w4a16_pack.h"

namespace w4jit::internal {
namespace {

constexpr int64_t kStep = kW4a16AmxKStep;  // k of a packed step

// x row `row` as row r of its tile (and of the tile's group sums).
void PackRow(const void* x, DType act_dtype, int64_t ldx, int64_t row,
             int64_t k, const int32_t* k_perm, int64_t sum_group,
             uint16_t* tile, float* tile_sums, int64_t r) {
  uint16_t* dst = tile + r * kStep;
  const bool f32 = act_dtype == DType::kF32;
  const auto* xf = static_cast<const float*>(x) + row * ldx;
  const auto* xb = static_cast<const uint16_t*>(x) + row * ldx;
  if (!f32 && k_perm == nullptr) {
    // bf16 in order: a copy per step.
    for (int64_t s = 0; s < k / kStep; ++s) {
      std::memcpy(dst + s * W4a16RowTiles::kMaxRows * kStep, xb + s * kStep,
                  kStep * 2);
    }
  } else {
    for (int64_t c = 0; c < k; ++c) {
      const int64_t src = k_perm == nullptr ? c : k_perm[c];
      dst[c / kStep * W4a16RowTiles::kMaxRows * kStep + c % kStep] =
          f32 ? F32ToBf16(xf[src]) : xb[src];
    }
  }
  if (sum_group <= 0) return;
  for (int64_t g = 0; g < k / sum_group; ++g) {
    float sum = 0.0f;
    for (int64_t c = g * sum_group; c < (g + 1) * sum_group; ++c) {
      sum += Bf16ToF32(
          dst[c / kStep * W4a16RowTiles::kMaxRows * kStep + c % kStep]);
    }
    tile_sums[g * W4a16RowTiles::kMaxRows + r] = sum;
  }
}

}  // namespace

void PackW4a16TileX(const void* x, DType act_dtype, int64_t ldx,
                    const W4a16RowTiles& tiles, int64_t k,
                    const int32_t* k_perm, int64_t sum_group, uint16_t* out,
                    float* sums) {
  const int64_t m = tiles.Row0(tiles.count);
  auto pack = [&](int64_t row0, int64_t row1) {
    for (int64_t t = 0; t < tiles.count; ++t) {
      const int64_t first = std::max(row0, tiles.Row0(t));
      const int64_t last = std::min(row1, tiles.Row0(t + 1));
      for (int64_t row = first; row < last; ++row) {
        PackRow(
            x, act_dtype, ldx, row, k, k_perm, sum_group,
            out + t * W4a16TileXElements(k),
            sum_group > 0 ? sums + t * W4a16TileSums(k, sum_group) : nullptr,
            row - tiles.Row0(t));
      }
    }
  };
  ForRowGroups(m, k, 1, pack);
}

}  // namespace w4jit::internal
