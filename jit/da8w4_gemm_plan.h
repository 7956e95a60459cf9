// The register plan of the DA8W4 kernel (jit/da8w4_gemm_generator.h), made
// once per config and shared by the config check (a tile is valid when it
// has a plan), the parameter check (runtime/da8w4/da8w4_params.cc) and the
// emitter (which places its registers by it): the register budget and the
// chunk limit are stated here only.
//
// Vector registers of a tile, in order: the accumulators (two per row and
// column block: the block's low and high nibble halves), then
//   in-loop unpacking (the weights' nibbles split in the loop):
//     AVX2:    wl, wh (the unpacked halves), b (the broadcast qa), t (the
//              vpmaddubsw product); the 0x0F mask and the int16 ones are
//              memory operands;
//     AVX-512: wl, wh, t (b's slot); the 0x0F mask in the last register;
//   decoded panels on AVX-512 (EmitQuadDecodedVnni): every block's two
//     weight vectors, then one broadcast row;
//   decoded panels on AVX2: as in-loop (the weights are loaded, not split).
// At a group end (the loop's registers are free then) a row's sum and a
// temporary: on AVX-512 the first two registers after the accumulators,
// on AVX2 b and wl, with wh the row's per-group activation scale (AVX-512
// reads that as an embedded broadcast) and t the widened int32 sums.
// The step start zeroes the f32 tile from the first register after the
// accumulators. The epilogue runs from the f32 tile on the stack, so every
// register is free there: it takes the first seven.
#ifndef W4JIT_JIT_DA8W4_GEMM_PLAN_H_
#define W4JIT_JIT_DA8W4_GEMM_PLAN_H_

#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"

namespace w4jit::internal {

struct Da8w4GemmPlan {
  int mr = 0;    // rows of the tile
  int nblk = 0;  // column blocks of the tile
  bool decoded = false;
  // The tier has vpdpbusd on zmm (IsaFeature::kAvx512Vnni): the VNNI steps
  // (jit/da8w4_gemm_vnni_steps.cc) with int32 accumulators in registers;
  // else the AVX2 steps.
  bool vnni = false;
  int nacc = 0;  // accumulators: 2 * mr * nblk (int16 on AVX2, int32 on zmm)
  // In-loop registers (also AVX2's decoded tiles).
  int wl = -1, wh = -1;
  int b = -1;     // AVX2: the broadcast; AVX-512: a temporary
  int t = -1;     // AVX2: the product
  int mask = -1;  // AVX-512 in-loop: the 0x0F mask
  // AVX-512 decoded: 2 * nblk weight vectors from `weights`, a broadcast.
  int weights = -1;
  int bcast = -1;
  // Group end: the row's sum and a temporary; AVX2: the row's activation
  // scale (per-group activation scales).
  int row_sum = -1, tmp = -1;
  int row_sa = -1;
  int zero = -1;  // step start: the zero the f32 tile is cleared from
  // Epilogue: the row's activation scale (broadcast), the value, the up
  // half (silu_mul) and four temporaries from ep_tmp on.
  int ep_sa = 0, ep_v = 1, ep_up = 2, ep_tmp = 3;
  int used = 0;  // vector registers the tile needs
  // Quads of one unrolled chunk, at most (Da8w4MaxChunkQuads).
  int max_chunk_quads = 0;

  int Acc(int row, int blk, int half) const {
    return (row * nblk + blk) * 2 + half;
  }
};

// The plan of an mr x nblk tile on `isa` (in-loop unpacking, or decoded
// panels); an error naming the registers it needs when they do not exist.
absl::StatusOr<Da8w4GemmPlan> MakeDa8w4GemmPlan(IsaTier isa, int mr, int nblk,
                                                bool decoded);
// The most blocks (mr * nblk) an in-loop tile of `isa` holds.
int Da8w4MaxTileBlocks(IsaTier isa);
// The most quads of a chunk on `isa`: AVX2 flushes its int16 partial sums
// each chunk.
int Da8w4MaxChunkQuads(IsaTier isa);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_GEMM_PLAN_H_
