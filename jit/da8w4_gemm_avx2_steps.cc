// The AVX2 steps of the DA8W4 kernel (no VNNI on Zen 3): per quad and
// block the nibbles unpacked (or a decoded panel's two vectors loaded),
// then per row vpmaddubsw u * qa into int16 partial sums (exact: 2 * 15 *
// 127 = 3810), up to chunk_quads quads (<= 8: 8 * 3810 < 32767) before a
// flush widens them with vpmaddwd into int32 on the stack; the last flush
// of a group ends it (EmitGroupEndOne). The driver
// (jit/da8w4_gemm_generator.cc) calls these; registers by the plan
// (jit/da8w4_gemm_plan.h).
#include "jit/da8w4_gemm_generator.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;
using Xbyak::util::ptr;

}  // namespace

void Da8w4GemmGenerator::EmitAvx2Group() {
  const int64_t gq = cfg_.layout.group_quads();
  const int chunk = cfg_.chunk_quads;
  // int16 partial sums of at most chunk quads, flushed into int32.
  const int64_t chunks = (gq + chunk - 1) / chunk;
  const int last = static_cast<int>(gq - (chunks - 1) * chunk);
  if (chunks == 1) {
    EmitChunk(last);
    EmitFlush(Flush::kOnly);
    return;
  }
  EmitChunk(chunk);
  EmitFlush(Flush::kStore);
  EmitChunkLoop(chunks - 2, [&] {
    EmitChunk(chunk);
    EmitFlush(Flush::kAdd);
  });
  EmitChunk(last);
  EmitFlush(Flush::kFinal);
}

void Da8w4GemmGenerator::EmitAvx2Quad(int q, bool first_in_chunk) {
  const Da8w4Layout& lay = cfg_.layout;
  const Xmm wl = vec_.Vec(plan_.wl), wh = vec_.Vec(plan_.wh);
  const Xmm b = vec_.Vec(plan_.b), t = vec_.Vec(plan_.t);
  // One row: broadcast its 4 activation bytes once for all blocks.
  const bool shared_broadcast = cfg_.mr == 1;
  if (shared_broadcast) vpbroadcastd(b, ptr[kQa + q * 4]);
  for (int blk = 0; blk < cfg_.nblk; ++blk) {
    const Xbyak::RegExp w = kW + blk * BlockStride() + q * QuadStride();
    if (cfg_.decoded) {
      vmovups(wl, ptr[w]);
      vmovups(wh, ptr[w + lay.quad_bytes()]);
    } else {
      // The 0x0F mask is a memory operand: the plan has no register left.
      vmovups(wh, ptr[w]);
      vpand(wl, wh, pool_.Splat32(0x0F0F0F0F));
      vpsrlw(wh, wh, 4);
      vpand(wh, wh, pool_.Splat32(0x0F0F0F0F));
    }
    for (int r = 0; r < cfg_.mr; ++r) {
      if (!shared_broadcast) vpbroadcastd(b, ptr[kQa + r * qa_stride_ + q * 4]);
      for (int half = 0; half < 2; ++half) {
        const Xmm acc = vec_.Vec(AccIndex(r, blk, half));
        if (first_in_chunk) {
          vpmaddubsw(acc, half ? wh : wl, b);
        } else {
          vpmaddubsw(t, half ? wh : wl, b);
          vpaddw(acc, acc, t);
        }
      }
    }
  }
}

void Da8w4GemmGenerator::EmitFlush(Flush mode) {
  const Xmm t = vec_.Vec(plan_.t);
  const Xmm row_sum = vec_.Vec(plan_.row_sum), tmp = vec_.Vec(plan_.tmp),
            row_sa = vec_.Vec(plan_.row_sa);
  const bool group_end = mode == Flush::kFinal || mode == Flush::kOnly;
  for (int r = 0; r < cfg_.mr; ++r) {
    if (group_end) LoadRowSum(r, row_sum);
    // Per group: sa[r, g] (the sa rows are laid out as the sums rows).
    if (group_end && cfg_.act_per_group) {
      vbroadcastss(row_sa, ptr[kSaCursor + r * sums_stride_]);
    }
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      for (int half = 0; half < 2; ++half) {
        const int i = AccIndex(r, blk, half);
        vpmaddwd(t, vec_.Vec(i), pool_.Splat16(1));
        if (mode != Flush::kStore && mode != Flush::kOnly) {
          vpaddd(t, t, ptr[rsp + I32Tile(i)]);
        }
        if (group_end) {
          EmitGroupEndOne(r, blk, half, t, row_sum, tmp, row_sa);
        } else {
          vmovaps(ptr[rsp + I32Tile(i)], t);
        }
      }
    }
  }
}

}  // namespace w4jit::internal
