// The AVX-512 VNNI steps of the DA8W4 kernel: int32 accumulators in
// registers for a whole group (no flushes), vpdpbusd u, qa per quad and
// block, from nibbles unpacked in the loop (the 0x0F mask in a register)
// or from a decoded panel (two loads per block, one broadcast per row);
// the group end straight from the registers, which it zeroes for the next
// group. The driver (jit/da8w4_gemm_generator.cc) calls these; registers
// by the plan (jit/da8w4_gemm_plan.h).
#include "jit/da8w4_gemm_generator.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;
using Xbyak::util::ptr;
using Xbyak::util::ptr_b;

}  // namespace

void Da8w4GemmGenerator::EmitVnniGroup() {
  const int64_t gq = cfg_.layout.group_quads();
  const int chunk = cfg_.chunk_quads;
  // int32 accumulators hold the whole group: no flushes.
  EmitChunkLoop(gq / chunk, [&] { EmitChunk(chunk); });
  if (gq % chunk != 0) EmitChunk(static_cast<int>(gq % chunk));
  EmitGroupEndVnni();
}

// In-loop unpacking: per block one load and three ALU ops, shared by the
// tile's rows; the rows' activation bytes broadcast once (one row) or
// embedded in each vpdpbusd.
void Da8w4GemmGenerator::EmitVnniQuad(int q) {
  const Xmm wl = vec_.Vec(plan_.wl), wh = vec_.Vec(plan_.wh);
  const Xmm b = vec_.Vec(plan_.b), mask = vec_.Vec(plan_.mask);
  const bool shared_broadcast = cfg_.mr == 1;
  if (shared_broadcast) vpbroadcastd(b, ptr[kQa + q * 4]);
  for (int blk = 0; blk < cfg_.nblk; ++blk) {
    vmovups(wh, ptr[kW + blk * BlockStride() + q * QuadStride()]);
    vpandd(wl, wh, mask);
    vpsrlw(wh, wh, 4);
    vpandd(wh, wh, mask);
    for (int r = 0; r < cfg_.mr; ++r) {
      const Xbyak::RegExp qa = kQa + r * qa_stride_ + q * 4;
      for (int half = 0; half < 2; ++half) {
        const Xmm acc = vec_.Vec(AccIndex(r, blk, half));
        if (shared_broadcast) {
          vpdpbusd(acc, half ? wh : wl, b);
        } else {
          vpdpbusd(acc, half ? wh : wl, ptr_b[qa]);
        }
      }
    }
  }
}

// A decoded panel: all blocks' weights of quad q in registers, then per
// row one broadcast feeding 2 * nblk vpdpbusd. Per quad: 2 * nblk + mr
// loads and 2 * mr * nblk vpdpbusd, nothing else.
void Da8w4GemmGenerator::EmitQuadDecodedVnni(int q) {
  const int nw = 2 * cfg_.nblk;
  const Xmm b = vec_.Vec(plan_.bcast);
  for (int i = 0; i < nw; ++i) {
    vmovups(vec_.Vec(plan_.weights + i),
            ptr[kW + (i / 2) * BlockStride() + q * QuadStride() +
                (i % 2) * cfg_.layout.quad_bytes()]);
  }
  for (int r = 0; r < cfg_.mr; ++r) {
    vpbroadcastd(b, ptr[kQa + r * qa_stride_ + q * 4]);
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      for (int half = 0; half < 2; ++half) {
        vpdpbusd(vec_.Vec(AccIndex(r, blk, half)),
                 vec_.Vec(plan_.weights + 2 * blk + half), b);
      }
    }
  }
}

void Da8w4GemmGenerator::EmitGroupEndVnni() {
  const Xmm row_sum = vec_.Vec(plan_.row_sum), tmp = vec_.Vec(plan_.tmp);
  for (int r = 0; r < cfg_.mr; ++r) {
    LoadRowSum(r, row_sum);
    // Per group: sa[r, g], an embedded broadcast (rows as the sums rows).
    const Xbyak::Address row_sa = ptr_b[kSaCursor + r * sums_stride_];
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      for (int half = 0; half < 2; ++half) {
        const Xmm acc = vec_.Vec(AccIndex(r, blk, half));
        EmitGroupEndOne(r, blk, half, acc, row_sum, tmp, row_sa);
        vpxord(acc, acc, acc);
      }
    }
  }
}

}  // namespace w4jit::internal
