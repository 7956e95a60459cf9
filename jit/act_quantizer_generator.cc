#include "jit/act_quantizer_generator.h"

#include <array>
#include <cstddef>

namespace w4jit::internal {
namespace {

using Xbyak::Address;
using Xbyak::Opmask;
using Xbyak::Xmm;
using P = ActQuantPlan;

// Register roles: jit/act_quant_plan.h.
using act_quant_gpr::kArgs;
using act_quant_gpr::kChunksLeft;
using act_quant_gpr::kGroupsLeft;
using act_quant_gpr::kLdx;
using act_quant_gpr::kMaxBits;
using act_quant_gpr::kQa;
using act_quant_gpr::kQaRow;
using act_quant_gpr::kRowsLeft;
using act_quant_gpr::kSa;
using act_quant_gpr::kSaRow;
using act_quant_gpr::kScratch;
using act_quant_gpr::kScratch32;
using act_quant_gpr::kSums;
using act_quant_gpr::kSumsRow;
using act_quant_gpr::kTable;
using act_quant_gpr::kTableRow;
using act_quant_gpr::kX;
using act_quant_gpr::kXRow;
using act_quant_kmask::kGather;
using act_quant_kmask::kGroupTail;
using act_quant_kmask::kRowTail;

constexpr uint32_t kF32Bits1e10 = 0x2EDBE6FF;  // 1e-10f
constexpr uint32_t kF32Bits127 = 0x42FE0000;   // 127.0f
constexpr uint32_t kF32QuietNan = 0x7FC00000;
constexpr uint32_t kF32ExpAllOnes = 0x7F800000;  // Inf; NaN is above
constexpr uint32_t kAbsBits = 0x7FFFFFFF;

}  // namespace

ActQuantizerGenerator::ActQuantizerGenerator(const ActQuantConfig& config)
    : Generator(config.name(), 64 * 1024),
      cfg_(config),
      plan_(MakeActQuantPlan(config)),
      vec_(this, config.isa),
      elem_bytes_(config.act_dtype == DType::kF32 ? 4 : 2),
      groups_(config.k / config.group_size) {}

void ActQuantizerGenerator::Generate() {
  Preamble();
  mov(kXRow, ptr[kArgs + offsetof(ActQuantArgs, x)]);
  mov(kLdx, ptr[kArgs + offsetof(ActQuantArgs, ldx_bytes)]);
  mov(kRowsLeft, ptr[kArgs + offsetof(ActQuantArgs, rows)]);
  mov(kQaRow, ptr[kArgs + offsetof(ActQuantArgs, qa)]);
  mov(kSaRow, ptr[kArgs + offsetof(ActQuantArgs, sa)]);
  mov(kSumsRow, ptr[kArgs + offsetof(ActQuantArgs, sums)]);
  if (cfg_.permuted) {
    mov(kTableRow, ptr[kArgs + offsetof(ActQuantArgs, k_perm)]);
  }
  vmovups(vec_.Vec(P::kAbsMask), pool_.Splat32(kAbsBits));
  vmovups(vec_.Vec(P::kHi), pool_.Splat32(127));
  vmovups(vec_.Vec(P::kLo), pool_.Splat32(static_cast<uint32_t>(-127)));
  if (vec_.avx512()) {
    mov(kScratch32, (1u << plan_.row_tail) - 1);
    kmovw(kRowTail, kScratch32);
    mov(kScratch32, (1u << plan_.group_tail) - 1);
    kmovw(kGroupTail, kScratch32);
  } else {
    vmovups(vec_.Vec(P::kRowTailMask), LaneMask(plan_.row_tail));
    vmovups(vec_.Vec(P::kGroupTailMask), LaneMask(plan_.group_tail));
  }

  Xbyak::Label row_loop, non_finite, next_row;
  L(row_loop);
  if (cfg_.per_group) {
    EmitPerGroupRow();
  } else {
    EmitAbsMax();
    cmp(kMaxBits, kF32ExpAllOnes);
    jae(non_finite, T_NEAR);
    EmitScale(ptr[kSaRow]);
    EmitQuantizeGroups();
    // The qa cursor is now at qa + K: zero the bytes up to RoundUp(K, 4)
    // that the last chunk store may not have reached (group tails shorter
    // than K's tail).
    if (cfg_.k % 4 != 0) mov(dword[kQa], 0);
    jmp(next_row, T_NEAR);

    L(non_finite);
    EmitNonFiniteRow();
  }

  L(next_row);
  add(kXRow, kLdx);
  add(kQaRow, QaRowStride(cfg_.k));
  add(kSaRow, SaRowStride(groups_, cfg_.per_group));
  add(kSumsRow, SumsRowStride(groups_));
  dec(kRowsLeft);
  jnz(row_loop, T_NEAR);
  Postamble();
  pool_.Emit(this);
}

void ActQuantizerGenerator::EmitScale(const Address& dst) {
  const Xmm s(P::kTmp);
  vmovd(s, kMaxBits);
  vmaxss(s, s, pool_.Splat32(kF32Bits1e10));
  vdivss(s, s, pool_.Splat32(kF32Bits127));
  vmovss(dst, s);
  vbroadcastss(vec_.Vec(P::kSa), s);
}

Xbyak::Address ActQuantizerGenerator::LaneMask(int count) {
  std::array<uint32_t, 16> data{};
  for (int i = 0; i < count; ++i) data[i] = 0xFFFFFFFF;
  return pool_.Table(data);
}

void ActQuantizerGenerator::LoadF32(const Xmm& v, const Xbyak::RegExp& at,
                                    int count, const Opmask& kmask,
                                    const Xmm& vmask) {
  const Address addr = ptr[at];
  const bool partial = count < plan_.lanes;
  if (cfg_.act_dtype == DType::kF32) {
    if (!partial) {
      vmovups(v, addr);
    } else if (vec_.avx512()) {
      vmovups(v | kmask | T_z, addr);  // masked lanes are not read
    } else {
      vmaskmovps(v, vmask, addr);  // likewise
    }
    return;
  }
  // bf16: widen the 16-bit patterns to the high half of each dword.
  if (!partial) {
    vpmovzxwd(v, addr);
  } else if (vec_.avx512()) {
    const Xbyak::Ymm half(v.getIdx());
    vmovdqu16(half | kmask | T_z, addr);
    vpmovzxwd(v, half);
  } else {
    // No 16-bit masked load in AVX2: insert the few tail words one by one.
    const Xmm x(v.getIdx());
    vpxor(x, x, x);
    for (int i = 0; i < count; ++i) vpinsrw(x, x, ptr[at + 2 * i], i);
    vpmovzxwd(v, x);
  }
  vpslld(v, v, 16);
}

void ActQuantizerGenerator::GatherF32(const Xmm& v, const Xmm& idx,
                                      const Address& table, int count,
                                      const Opmask& kmask, const Xmm& vmask) {
  const bool partial = count < plan_.lanes;
  const Xmm vmask_all = vec_.Vec(P::kGatherMask);
  vmovups(idx, table);
  if (cfg_.act_dtype == DType::kF32) {
    // Lanes left out of the gather keep the zero (row / group padding).
    vpxor(Xmm(v.getIdx()), Xmm(v.getIdx()), Xmm(v.getIdx()));
    if (vec_.avx512()) {
      if (partial) {
        kmovw(kGather, kmask);
      } else {
        kxnorw(kGather, kGather, kGather);
      }
      vpgatherdd(v | kGather, ptr[kXRow + idx * 4]);
    } else {
      if (partial) {
        vmovaps(vmask_all, vmask);
      } else {
        vpcmpeqd(vmask_all, vmask_all, vmask_all);
      }
      vpgatherdd(v, ptr[kXRow + idx * 4], vmask_all);
    }
    return;
  }
  // bf16: the dword at x + 2 * k_perm[j] - 2 holds x[k_perm[j]] in its
  // high half. Lanes with k_perm[j] = 0 are left out (that dword would
  // start before x) and keep x[0] from kX0; lanes past `count` keep 0.
  const Xmm x0 = vec_.Vec(P::kX0);
  if (vec_.avx512()) {
    if (partial) {
      vpcmpgtd(kGather | kmask, idx, pool_.Splat32(0));
      vmovaps(v | kmask | T_z, x0);
    } else {
      vpcmpgtd(kGather, idx, pool_.Splat32(0));
      vmovaps(v, x0);
    }
    vpgatherdd(v | kGather, ptr[kXRow + idx * 2 - 2]);
  } else {
    vpcmpgtd(vmask_all, idx, pool_.Splat32(0));
    if (partial) {
      vpand(vmask_all, vmask_all, vmask);
      vpand(v, x0, vmask);
    } else {
      vmovaps(v, x0);
    }
    vpgatherdd(v, ptr[kXRow + idx * 2 - 2], vmask_all);
  }
  vec_.And(v, v, pool_.Splat32(0xFFFF0000));
}

void ActQuantizerGenerator::EmitAbsMax() {
  const int lanes = plan_.lanes;
  const int64_t full = cfg_.RowMaxColumns() / lanes;
  const int64_t unrolled = full / P::kUnroll;
  const int rest = static_cast<int>(full % P::kUnroll);
  const int step = lanes * elem_bytes_;
  const Xmm v_abs = vec_.Vec(P::kAbsMask);
  // Act-order bf16 keeps x[0] there in pass 2 of the previous row.
  if (cfg_.permuted && cfg_.act_dtype == DType::kBF16) {
    vmovups(v_abs, pool_.Splat32(kAbsBits));
  }
  // (VEX xor of the xmm clears the whole register at either width.)
  for (int u = 0; u < P::kUnroll; ++u) {
    vpxor(Xmm(P::kMax + u), Xmm(P::kMax + u), Xmm(P::kMax + u));
  }
  mov(kX, kXRow);
  auto one = [&](int u, int offset, int count) {
    const Xmm t = vec_.Vec(P::kTmp + u), max = vec_.Vec(P::kMax + u);
    LoadF32(t, kX + offset, count, kRowTail, vec_.Vec(P::kRowTailMask));
    vec_.And(t, t, v_abs);
    vpmaxsd(max, max, t);  // patterns are >= 0: a signed max works
  };
  if (unrolled > 0) {
    Xbyak::Label loop;
    mov(kChunksLeft, unrolled);
    L(loop);
    for (int u = 0; u < P::kUnroll; ++u) one(u, u * step, lanes);
    add(kX, P::kUnroll * step);
    dec(kChunksLeft);
    jnz(loop, T_NEAR);
  }
  for (int u = 0; u < rest; ++u) one(u, u * step, lanes);
  if (plan_.row_tail > 0) one(3, rest * step, plan_.row_tail);
  const auto max = [&](int u) { return vec_.Vec(P::kMax + u); };
  vpmaxsd(max(0), max(0), max(1));
  vpmaxsd(max(2), max(2), max(3));
  vpmaxsd(max(0), max(0), max(2));
  ReduceLanes(P::kMax, P::kMax + 1, /*max=*/true);
  vmovd(kMaxBits, Xmm(P::kMax));
}

void ActQuantizerGenerator::ReduceLanes(int v, int t, bool max) {
  auto op = [&](const Xmm& d, const Xmm& a, const Xmm& b) {
    if (max) {
      vpmaxsd(d, a, b);
    } else {
      vpaddd(d, a, b);
    }
  };
  const Xbyak::Ymm yv(v), yt(t);
  const Xmm xv(v), xt(t);
  if (vec_.avx512()) {
    vextracti64x4(yt, Xbyak::Zmm(v), 1);
    op(yv, yv, yt);
  }
  vextracti128(xt, yv, 1);
  op(xv, xv, xt);
  vpshufd(xt, xv, 0x4E);
  op(xv, xv, xt);
  vpshufd(xt, xv, 0xB1);
  op(xv, xv, xt);
}

// One chunk of up to `lanes` values at the x cursor -> int8 at the qa
// cursor, summed into the group sum. `slot` picks independent temporaries
// so unrolled chunks overlap.
void ActQuantizerGenerator::EmitChunk(int slot, int count) {
  const int lanes = plan_.lanes;
  const Xmm a = vec_.Vec(P::kValue + slot), b = vec_.Vec(P::kTmp + slot);
  const Xmm vmask = vec_.Vec(P::kGroupTailMask);
  const int x_off = slot * lanes * elem_bytes_;
  const int q_off = slot * lanes;
  if (cfg_.permuted) {
    GatherF32(a, b, ptr[kTable + slot * lanes * 4], count, kGroupTail, vmask);
  } else {
    LoadF32(a, kX + x_off, count, kGroupTail, vmask);
  }
  vdivps(a, a, vec_.Vec(P::kSa));
  vcvtps2dq(a, a);  // default MXCSR: round half to even
  vpminsd(a, a, vec_.Vec(P::kHi));
  vpmaxsd(a, a, vec_.Vec(P::kLo));
  vpaddd(vec_.Vec(P::kGroupSum), vec_.Vec(P::kGroupSum), a);
  if (vec_.avx512()) {
    vpmovsdb(ptr[kQa + q_off], a);  // 16 bytes; masked lanes are 0
  } else {
    const Xmm xa(a.getIdx()), xb(b.getIdx());
    vextracti128(xb, Xbyak::Ymm(a.getIdx()), 1);
    vpackssdw(xa, xa, xb);
    vpacksswb(xa, xa, xa);
    vmovq(ptr[kQa + q_off], xa);  // 8 bytes; masked lanes are 0
  }
}

void ActQuantizerGenerator::EmitGroupCursors() {
  mov(kX, kXRow);
  mov(kQa, kQaRow);
  mov(kSums, kSumsRow);
  mov(kGroupsLeft, groups_);
  if (cfg_.permuted) {
    mov(kTable, kTableRow);
    if (cfg_.act_dtype == DType::kBF16) {
      // x[0] as f32 bits in every lane: the value of the lane that the
      // gather leaves out (GatherF32).
      movzx(kScratch32, word[kXRow]);
      shl(kScratch32, 16);
      vmovd(Xmm(P::kX0), kScratch32);
      vpbroadcastd(vec_.Vec(P::kX0), Xmm(P::kX0));
    }
  }
}

void ActQuantizerGenerator::EmitQuantizeGroup() {
  const int lanes = plan_.lanes;
  const int64_t full = cfg_.group_size / lanes;
  const int64_t unrolled = full / P::kUnroll;
  const int rest = static_cast<int>(full % P::kUnroll);
  const Xmm sum(P::kGroupSum);
  vpxor(sum, sum, sum);
  if (unrolled > 0) {
    Xbyak::Label loop;
    mov(kChunksLeft, unrolled);
    L(loop);
    for (int u = 0; u < P::kUnroll; ++u) EmitChunk(u, lanes);
    add(kX, P::kUnroll * lanes * elem_bytes_);
    add(kQa, P::kUnroll * lanes);
    if (cfg_.permuted) add(kTable, P::kUnroll * lanes * 4);
    dec(kChunksLeft);
    jnz(loop, T_NEAR);
  }
  for (int u = 0; u < rest; ++u) EmitChunk(u, lanes);
  if (rest > 0) AdvanceCursors(rest * lanes);
  if (plan_.group_tail > 0) {
    // The store writes a full chunk: bytes past the group are zeros that
    // the next group overwrites, or the row padding the kernels rely on.
    EmitChunk(0, plan_.group_tail);
    AdvanceCursors(plan_.group_tail);
  }
  ReduceLanes(P::kGroupSum, P::kTmp, /*max=*/false);  // -> sums[g]
  vmovd(ptr[kSums], sum);
}

void ActQuantizerGenerator::AdvanceCursors(int64_t count) {
  add(kX, count * elem_bytes_);
  add(kQa, count);
  if (cfg_.permuted) add(kTable, count * 4);
}

void ActQuantizerGenerator::EmitQuantizeGroups() {
  EmitGroupCursors();
  Xbyak::Label group_loop;
  L(group_loop);
  EmitQuantizeGroup();
  add(kSums, 4);
  dec(kGroupsLeft);
  jnz(group_loop, T_NEAR);
}

void ActQuantizerGenerator::EmitPerGroupRow() {
  EmitGroupCursors();
  mov(kSa, kSaRow);
  Xbyak::Label group_loop, non_finite, next_group;
  L(group_loop);
  EmitGroupAbsMax();
  cmp(kMaxBits, kF32ExpAllOnes);
  jae(non_finite, T_NEAR);
  EmitScale(ptr[kSa]);  // sa[g], as per token
  EmitQuantizeGroup();
  jmp(next_group, T_NEAR);
  L(non_finite);
  EmitNonFiniteGroup();
  L(next_group);
  add(kSums, 4);
  add(kSa, 4);
  dec(kGroupsLeft);
  jnz(group_loop, T_NEAR);
  // As per token: zero the bytes up to RoundUp(K, 4).
  if (cfg_.k % 4 != 0) mov(dword[kQa], 0);
}

// Max of |x| bit patterns over the group at the cursors, two chunks at a
// time into maxima 0 / 1 (temporaries kTmp + u, gather indices
// kGroupGatherIdx + u); the x and table cursors end where they started,
// the qa cursor is not used.
void ActQuantizerGenerator::EmitGroupAbsMax() {
  const int lanes = plan_.lanes;
  const int64_t full = cfg_.group_size / lanes;
  const int pairs = P::kGroupMaxUnroll;
  const Address abs_mask = pool_.Splat32(kAbsBits);
  vpxor(Xmm(P::kMax), Xmm(P::kMax), Xmm(P::kMax));
  vpxor(Xmm(P::kMax + 1), Xmm(P::kMax + 1), Xmm(P::kMax + 1));
  // Chunk `at` (in chunks from the cursors) into maximum u.
  auto one = [&](int u, int at, int count) {
    const Xmm t = vec_.Vec(P::kTmp + u), max = vec_.Vec(P::kMax + u);
    const Xmm vmask = vec_.Vec(P::kGroupTailMask);
    if (cfg_.permuted) {
      GatherF32(t, vec_.Vec(P::kGroupGatherIdx + u),
                ptr[kTable + at * lanes * 4], count, kGroupTail, vmask);
    } else {
      LoadF32(t, kX + at * lanes * elem_bytes_, count, kGroupTail, vmask);
    }
    vec_.And(t, t, abs_mask);
    vpmaxsd(max, max, t);  // patterns >= 0: signed max
  };
  if (full / pairs > 0) {
    Xbyak::Label loop;
    mov(kChunksLeft, full / pairs);
    L(loop);
    one(0, 0, lanes);
    one(1, 1, lanes);
    add(kX, pairs * lanes * elem_bytes_);
    if (cfg_.permuted) add(kTable, pairs * lanes * 4);
    dec(kChunksLeft);
    jnz(loop, T_NEAR);
  }
  if (full % pairs != 0) {
    one(0, 0, lanes);
    add(kX, lanes * elem_bytes_);
    if (cfg_.permuted) add(kTable, lanes * 4);
  }
  if (plan_.group_tail > 0) one(1, 0, plan_.group_tail);
  if (full > 0) {  // back to the group start
    sub(kX, full * lanes * elem_bytes_);
    if (cfg_.permuted) sub(kTable, full * lanes * 4);
  }
  vpmaxsd(vec_.Vec(P::kMax), vec_.Vec(P::kMax), vec_.Vec(P::kMax + 1));
  ReduceLanes(P::kMax, P::kMax + 1, /*max=*/true);
  vmovd(kMaxBits, Xmm(P::kMax));
}

// A group with NaN or Inf: sa[g] = NaN, its qa (the extent pass 2 stores)
// and sums[g] 0; the cursors move past the group.
void ActQuantizerGenerator::EmitNonFiniteGroup() {
  const int lanes = plan_.lanes;
  const int64_t chunks = (cfg_.group_size + lanes - 1) / lanes;
  const Xmm zero(P::kTmp);
  mov(dword[kSa], kF32QuietNan);
  mov(dword[kSums], 0);
  vpxor(zero, zero, zero);
  Xbyak::Label loop;
  mov(kChunksLeft, chunks);
  L(loop);
  if (vec_.avx512()) {
    vmovdqu(ptr[kQa], zero);  // 16 bytes, as vpmovsdb stores
  } else {
    vmovq(ptr[kQa], zero);  // 8 bytes, as pass 2 stores
  }
  add(kQa, lanes);
  dec(kChunksLeft);
  jnz(loop, T_NEAR);
  // The qa cursor moved by chunks * lanes; pass 2 would have moved it by
  // the group.
  add(kX, cfg_.group_size * elem_bytes_);
  if (chunks * lanes != cfg_.group_size) {
    sub(kQa, chunks * lanes - cfg_.group_size);
  }
  if (cfg_.permuted) add(kTable, cfg_.group_size * 4);
}

// NaN or Inf in the row: sa = NaN, qa and sums all 0 (so the GEMM yields
// 0 * NaN = NaN for the whole row, and nothing else is disturbed).
void ActQuantizerGenerator::EmitNonFiniteRow() {
  mov(dword[kSaRow], kF32QuietNan);
  const Xmm zero = vec_.Vec(P::kTmp);
  vpxor(Xmm(P::kTmp), Xmm(P::kTmp), Xmm(P::kTmp));
  Xbyak::Label qa_loop, sum_loop;
  mov(kScratch, kQaRow);
  mov(kChunksLeft, (cfg_.k + vec_.bytes() - 1) / vec_.bytes());
  L(qa_loop);
  vmovups(ptr[kScratch], zero);
  add(kScratch, vec_.bytes());
  dec(kChunksLeft);
  jnz(qa_loop, T_NEAR);
  mov(kScratch, kSumsRow);
  mov(kChunksLeft, groups_);
  L(sum_loop);
  mov(dword[kScratch], 0);
  add(kScratch, 4);
  dec(kChunksLeft);
  jnz(sum_loop, T_NEAR);
}

}  // namespace w4jit::internal
