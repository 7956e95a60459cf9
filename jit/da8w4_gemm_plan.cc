#include "jit/da8w4_gemm_plan.h"

#include "absl/strings/str_format.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

// Registers of an in-loop tile besides its accumulators: wl, wh, b, t
// (AVX2); wl, wh, t and the mask (AVX-512).
constexpr int kInLoopOthers = 4;
// AVX2 flushes its int16 partial sums at least every 8 quads (8 * 2 * 15 *
// 127 < 32767); zmm accumulates int32, and 32 bounds the unroll.
constexpr int kInt16MaxChunkQuads = 8;
constexpr int kInt32MaxChunkQuads = 32;

}  // namespace

absl::StatusOr<Da8w4GemmPlan> MakeDa8w4GemmPlan(IsaTier isa, int mr, int nblk,
                                                bool decoded) {
  const int regs = TraitsOf(isa).vector_regs;
  // vpdpbusd (int32 accumulators, every register of a tile its own) or
  // AVX2's vpmaddubsw pairs (int16 products through b and t).
  const bool vnni = TierHas(isa, IsaFeature::kAvx512Vnni);
  if (mr < 1 || nblk < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tile %d x %d blocks is empty", mr, nblk));
  }
  Da8w4GemmPlan p;
  p.mr = mr;
  p.nblk = nblk;
  p.decoded = decoded;
  p.vnni = vnni;
  p.nacc = 2 * mr * nblk;
  p.max_chunk_quads = Da8w4MaxChunkQuads(isa);
  int next = p.nacc;
  p.zero = next;
  if (vnni) {
    p.row_sum = next;
    p.tmp = next + 1;
  }
  if (decoded && vnni) {
    p.weights = next;
    next += 2 * nblk;
    p.bcast = next++;
    p.used = next;
  } else {
    p.wl = next++;
    p.wh = next++;
    p.b = next++;
    if (vnni) {
      p.mask = regs - 1;
    } else {
      p.t = next;
      p.row_sum = p.b;
      p.tmp = p.wl;
      p.row_sa = p.wh;
    }
    p.used = p.nacc + kInLoopOthers;
  }
  if (p.used > regs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s tile %d x %d blocks needs %d vector registers, %d exist",
        decoded ? "decoded" : "in-loop", mr, nblk, p.used, regs));
  }
  return p;
}

int Da8w4MaxTileBlocks(IsaTier isa) {
  return (TraitsOf(isa).vector_regs - kInLoopOthers) / 2;
}

int Da8w4MaxChunkQuads(IsaTier isa) {
  return TierHas(isa, IsaFeature::kAvx512Vnni) ? kInt32MaxChunkQuads
                                               : kInt16MaxChunkQuads;
}

}  // namespace w4jit::internal
