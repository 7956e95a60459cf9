// x as the W4A16 AMX tile kernel reads it (jit/w4a16_amx_generator.h): the
// call's rows cut into row tiles of equal height to within one row (at
// most 32), each tile packed per K step of 32 as 32 rows of 32 bf16 (2 KiB,
// rows of the tile that do not exist are left unwritten), so that an A
// tile is 16 contiguous lines. Read in place, rows K * 2 bytes apart all
// fell in one L1 set at the K of real layers (docs/amx.md).
#ifndef W4JIT_RUNTIME_W4A16_W4A16_TILE_X_H_
#define W4JIT_RUNTIME_W4A16_W4A16_TILE_X_H_

#include <algorithm>
#include <cstdint>

#include "jit/w4a16_amx_plan.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// The row tiles of m rows.
struct W4a16RowTiles {
  static constexpr int64_t kMaxRows = kW4a16AmxMaxRows;

  explicit W4a16RowTiles(int64_t m)
      : count((m + kMaxRows - 1) / kMaxRows),
        base_rows(count == 0 ? 0 : m / count),
        extra(count == 0 ? 0 : m % count) {}
  // The first row of tile t (t = count: m).
  int64_t Row0(int64_t t) const { return t * base_rows + std::min(t, extra); }
  int64_t Rows(int64_t t) const { return Row0(t + 1) - Row0(t); }

  int64_t count;
  int64_t base_rows;
  int64_t extra;
};

// uint16 elements of one packed tile over K (K a multiple of 32).
inline int64_t W4a16TileXElements(int64_t k) {
  return k * W4a16RowTiles::kMaxRows;
}
// f32 sums of one tile over K, for groups of sum_group columns.
inline int64_t W4a16TileSums(int64_t k, int64_t sum_group) {
  return k / sum_group * W4a16RowTiles::kMaxRows;
}

// Packs x (m rows of K, bf16 or f32 rounded to bf16 nearest-even, row
// stride ldx elements; element k of a packed row is x column k_perm[k]
// when k_perm is given) into `out`: tile t at t * W4a16TileXElements(k).
// sum_group > 0 (float zero points): sums[t * W4a16TileSums + g * 32 + r]
// is the f32 sum, in k order, of the bf16 values of row r of tile t over
// group g. On the library's threads once there is enough to pack; the
// bytes do not depend on the thread count.
void PackW4a16TileX(const void* x, DType act_dtype, int64_t ldx,
                    const W4a16RowTiles& tiles, int64_t k,
                    const int32_t* k_perm, int64_t sum_group, uint16_t* out,
                    float* sums);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_W4A16_TILE_X_H_
