// The bf16-dot flavour's steps of the W4A16 int4 kernel (AVX512_BF16):
// the vpermw table that turns nibbles into bf16 (u - 8), the group start
// (zero accumulators), and the steps (k octets) that decode each vector's
// four k pairs and multiply them with the rows' x pairs in vdpbf16ps. The
// driver (jit/w4a16_gemv_generator.cc) calls these; a new dot tile (a Zen 5
// shape, another table) changes this file and the plan only.
#include <array>
#include <optional>

#include "base/numeric.h"
#include "jit/w4a16_decode.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_gemv_plan.h"
#include "jit/w4a16_layout.h"

namespace w4jit::internal {
namespace {

using w4a16_gemv_gpr::kW;
using w4a16_gemv_gpr::kX;
using Xbyak::Xmm;
using Xbyak::util::ptr;
using Xbyak::util::ptr_b;

// bf16 bits of small integers, exact.
uint16_t Bf16OfInt(int v) { return F32ToBf16(static_cast<float>(v)); }

}  // namespace

void W4a16GemvGenerator::EmitDotTileConstants(const W4a16GemvPlan& p) {
  // bf16 of u - 8 at index u. Index bits above the nibble are those of
  // the next nibble: entries 16..31 repeat 0..15, so no mask is needed.
  std::array<uint32_t, 16> t;
  for (int j = 0; j < 16; ++j) {
    const int lo = ((2 * j) & 15) - 8;
    const int hi = ((2 * j + 1) & 15) - 8;
    t[j] = Bf16OfInt(lo) | (static_cast<uint32_t>(Bf16OfInt(hi)) << 16);
  }
  vmovups(vec_.Vec(p.table), pool_.Table(t));
}

void W4a16GemvGenerator::EmitDotGroupStart(const W4a16GemvPlan& p, int mr) {
  ZeroAccumulators(p, mr, /*skip_k_even=*/false);
}

void W4a16GemvGenerator::EmitDotSteps(const W4a16GemvPlan& p, int steps,
                                      int mr) {
  for (int s = 0; s < steps; ++s) {
    EmitStepPrefetch(p, s);
    for (int v = 0; v < p.nv; ++v) EmitDotVector(p, s, v, mr);
  }
}

void W4a16GemvGenerator::EmitDotVector(const W4a16GemvPlan& p, int s, int v,
                                       int mr) {
  const int c = p.v0 + v;  // the vector's place in the block
  const Xmm raw = vec_.Vec(p.t0);
  const Xmm pair = vec_.Vec(p.t1);
  const Xmm table = vec_.Vec(p.table);
  // One plain load: word 2c / 2c + 1 holds column c's even / odd k of the
  // octet, pair j of it in nibble j (w4a16_layout.h). No widening shuffle:
  // Zen 4 runs zmm shuffles at half rate on two pipes, and vpmovzxbw was a
  // third of the decode's shuffle work.
  vmovdqu16(raw, ptr[kW + s * StepWeightBytes() + c * 64]);
  for (int j = 0; j < 4; ++j) {
    // vpermw reads the low 5 index bits, and the table repeats above 15:
    // the next nibble's bit needs no mask.
    if (j > 0) vpsrlw(pair, raw, 4 * j);
    vpermw(pair, j == 0 ? raw : pair, table);
    for (int r = 0; r < mr; ++r) {
      vdpbf16ps(vec_.Vec(p.Acc(r, v, j % 2 == 0 ? 0 : p.split - 1)), pair,
                ptr_b[kX + ((4 * s + j) * mr + r) * 4]);
    }
  }
}

}  // namespace w4jit::internal
