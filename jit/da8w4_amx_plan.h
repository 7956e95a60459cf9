// The tile plan of the DA8W4 AMX kernel (jit/da8w4_amx_generator.h): which
// of the eight tile registers holds what, their shapes (the palette-1
// configuration ldtilecfg loads) and the K step, made once per config and
// shared by the config check and the emitter.
//
// One call step computes up to 32 rows x one block of 32 columns (the
// block's two halves of 16 columns, as the vector kernels' decoded panels
// hold them): four int32 accumulator tiles C[row half][column half] of
// 16 rows x 16 int32, two A tiles (the quantized activations, 16 rows x
// k_step bytes each, read straight from the quantizer's rows) and two B
// tiles (k_step / 4 rows x 64 bytes: row q holds, for 16 columns, the 4
// bytes of quad q, which is exactly one decoded half-vector; the decoded
// panel's quads are 128 bytes apart, so B is loaded with stride 128).
//
// The per-group weight scales (the design's crux): a tile dot product sums
// the whole K extent of its A tile, so a K step never crosses a group:
// k_step is 64 bytes where the group (or, per channel, the padded K) is a
// multiple of 64, else 32. At each group end the four accumulators are
// stored (tilestored) to the stack, by the next group's first K step
// (jit/da8w4_amx_generator.h), and the vector code of the AVX-512
// kernel turns each row into f32 with the zero-point term, the group scale
// and the f32 tile on the stack, exactly as that kernel does: the results
// are bit-identical to it. Per channel there is one group end per step.
#ifndef W4JIT_JIT_DA8W4_AMX_PLAN_H_
#define W4JIT_JIT_DA8W4_AMX_PLAN_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "jit/da8w4_gemm_plan.h"
#include "jit/da8w4_layout.h"

namespace w4jit::internal {

inline constexpr int kDa8w4AmxMaxRows = 32;

struct Da8w4AmxPlan {
  int mr = 0;
  int row_tiles = 0;    // 1 (mr <= 16) or 2
  int k_step = 0;       // bytes of K per tile dot product: 32 or 64
  int64_t k_steps = 0;  // per group (per channel: over the padded K)
  // Tile registers.
  static constexpr int kC = 0;  // C[rt][half] = kC + 2 * rt + half
  static constexpr int kA = 4;  // A[rt] = kA + rt
  static constexpr int kB = 6;  // B[half] = kB + half
  // The vector side (group ends, epilogue): the plan whose f32 tile and
  // int32 stack rows the AVX-512 kernel's code reads, 2 * mr accumulators
  // (row r, half h at Acc(r, 0, h)). At a group end the accumulators are
  // on the stack, so the vector registers are free: a row's int32 sums
  // (kGroupAcc), vec's row sum and temporary (1, 2), and the group's
  // widened scales and u4 zero points of each half, loaded once for all
  // rows (kGroupScales + half, kGroupZeros + half).
  static constexpr int kGroupAcc = 0;
  static constexpr int kGroupScales = 3;
  static constexpr int kGroupZeros = 5;
  Da8w4GemmPlan vec;

  int Rows(int row_tile) const {
    return row_tile == 0 ? (mr < 16 ? mr : 16) : mr - 16;
  }
  // The 64 bytes ldtilecfg loads (palette 1).
  std::array<uint8_t, 64> TileConfig() const;
};

// The plan of an mr-row tile (1..32) over one decoded block; an error
// naming what does not fit (rows, blocks, a group or K that is not a
// multiple of 32 bytes, packed rather than decoded weights, lanes not 16).
absl::StatusOr<Da8w4AmxPlan> MakeDa8w4AmxPlan(int mr, int nblk, bool decoded,
                                              const Da8w4Layout& layout);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_AMX_PLAN_H_
