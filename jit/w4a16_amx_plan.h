// The tile plan of the W4A16 AMX kernel (jit/w4a16_amx_generator.h): which
// of the eight tile registers holds what, their shapes (the palette-1
// configuration ldtilecfg loads) and the K steps of a group, made once per
// config and shared by the config check and the emitter.
//
// One column pair at a time (32 columns: two vectors of 16 of the packed
// block), up to 32 rows: four f32 accumulator tiles C[row half][column
// half] of 16 rows x 16 f32, two A tiles (bf16 rows of x, 16 rows x 32 k)
// and two B tiles (16 k pairs x 16 columns: row p holds, per column, the
// bf16 weights of k 2p and 2p + 1, one dword, as tdpbf16ps reads them).
// A K step is 32 k: a group (per channel: a segment of K) is k_steps of
// them, and no step crosses a group, so that each group's sums can take
// the group's scale (the design's crux, jit/w4a16_amx_generator.h).
#ifndef W4JIT_JIT_W4A16_AMX_PLAN_H_
#define W4JIT_JIT_W4A16_AMX_PLAN_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"

namespace w4jit::internal {

inline constexpr int kW4a16AmxMaxRows = 32;
// k of one tile dot product: 16 bf16 pairs.
inline constexpr int kW4a16AmxKStep = 32;

// The decoded panel the B tiles read (jit/w4a16_amx_decode_generator.h):
// within a tile group of group_pairs k pairs, each column pair's rows of
// 32 dwords in turn; half h (16 columns) of a row at + 64 h.
inline constexpr int64_t kW4a16AmxPanelRowBytes = 128;
inline constexpr int64_t W4a16AmxPanelOffset(int64_t group_pairs, int pair,
                                             int half) {
  return pair * group_pairs * kW4a16AmxPanelRowBytes + half * 64;
}

struct W4a16AmxPlan {
  int mr = 0;
  int row_tiles = 0;    // 1 (mr <= 16) or 2
  int64_t k_steps = 0;  // per group
  // Tile registers.
  static constexpr int kC = 0;  // C[rt][half] = kC + 2 * rt + half
  static constexpr int kA = 4;  // A[rt] = kA + rt
  static constexpr int kB = 6;  // B[half] = kB + half
  // The stack rows tilestored writes C to: one row of 32 f32 per output
  // row (half 0, then half 1).
  static constexpr int kStackRowBytes = 128;

  int Rows(int row_tile) const {
    return row_tile == 0 ? (mr < 16 ? mr : 16) : mr - 16;
  }
  // The 64 bytes ldtilecfg loads (palette 1).
  std::array<uint8_t, 64> TileConfig() const;
};

// The plan of an mr-row tile (1..32) over groups of `group_k` k (a
// multiple of 32); an error naming what does not fit.
absl::StatusOr<W4a16AmxPlan> MakeW4a16AmxPlan(int mr, int64_t group_k);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_AMX_PLAN_H_
