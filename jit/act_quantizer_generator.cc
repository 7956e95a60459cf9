#include "jit/act_quantizer_generator.h"

#include <array>
#include <cstddef>

#include "absl/strings/str_cat.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

using Xbyak::Address;
using Xbyak::Opmask;
using Xbyak::Xmm;

constexpr uint32_t kF32Bits1e10 = 0x2EDBE6FF;  // 1e-10f
constexpr uint32_t kF32Bits127 = 0x42FE0000;   // 127.0f
constexpr uint32_t kF32QuietNan = 0x7FC00000;
constexpr uint32_t kF32ExpAllOnes = 0x7F800000;  // Inf; NaN is above

// General-purpose register roles, one each for the whole kernel: the
// current row's outputs, then pass 2's cursors and counter.
using Xbyak::Operand;
constexpr Xbyak::Reg64 kQaRow(Operand::R8);     // quantized row
constexpr Xbyak::Reg64 kSaRow(Operand::R9);     // its scale(s)
constexpr Xbyak::Reg64 kSumsRow(Operand::R10);  // its group sums
constexpr Xbyak::Reg64 kX(Operand::R11);        // x cursor
constexpr Xbyak::Reg64 kQa(Operand::R12);       // quantized cursor
constexpr Xbyak::Reg64 kSums(Operand::R13);     // group-sum cursor
constexpr Xbyak::Reg64 kGroupsLeft(Operand::R14);
constexpr Xbyak::Reg64 kTable(Operand::R15);  // act-order table cursor

}  // namespace

ActQuantConfig ActQuantConfig::Canonical() const {
  ActQuantConfig c = *this;
  c.isa = TraitsOf(c.isa).vector_tier;
  if (c.x_k == c.k) c.x_k = 0;
  return c;
}

std::string ActQuantConfig::name() const {
  const ActQuantConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kQuantizer;
  key.isa = c.isa;
  key.act_dtype = c.act_dtype;
  key.out_dtype = c.act_dtype;  // unused by the quantizer: kept canonical
  key.group_size = c.group_size;
  key.per_channel = c.group_size == c.k;
  key.k = c.k;
  key.variant_bits = c.permuted ? 1 : 0;
  key.act_per_group = c.per_group;
  // n is no dimension of the quantizer otherwise: the x columns of pass 1
  // when they are not K (x_k).
  key.n = c.x_k;
  return key.str();
}

ActQuantizerGenerator::ActQuantizerGenerator(const ActQuantConfig& config)
    : Generator(config.name(), 64 * 1024),
      cfg_(config),
      vec_(this, config.isa),
      elem_bytes_(config.act_dtype == DType::kF32 ? 4 : 2),
      groups_(config.k / config.group_size) {}

// Register plan (System V; Preamble saves the callee-saved ones):
//   rsi x row, rdx ldx, rcx rows left, kQaRow, kSaRow, kSumsRow (below),
//   rdi per group: sa cursor (the args are all loaded first),
//   the cursors kX, kQa, kSums, the group counter kGroupsLeft,
//   rbx chunk counter, rax scratch; act-order: rbp table, kTable its cursor.
//   v4 abs mask (pass 1; act-order bf16: x[0] in every lane's high half
//   in pass 2, so pass 1 reloads it), v5 sa, v6 group sum, v7 +127, v8 -127,
//   v13 / v14 AVX2 lane masks for the row tail / group tail (f32 only),
//   k1 / k2 the same for AVX-512; v0-v3, v9-v12 temporaries; act-order:
//   v15 / k3 gather mask.
void ActQuantizerGenerator::Generate() {
  const Xmm v_abs = vec_.Vec(4), v_sa = vec_.Vec(5), v_pos = vec_.Vec(7),
            v_neg = vec_.Vec(8);
  Preamble();
  mov(rsi, ptr[rdi + offsetof(ActQuantArgs, x)]);
  mov(rdx, ptr[rdi + offsetof(ActQuantArgs, ldx_bytes)]);
  mov(rcx, ptr[rdi + offsetof(ActQuantArgs, rows)]);
  mov(kQaRow, ptr[rdi + offsetof(ActQuantArgs, qa)]);
  mov(kSaRow, ptr[rdi + offsetof(ActQuantArgs, sa)]);
  mov(kSumsRow, ptr[rdi + offsetof(ActQuantArgs, sums)]);
  if (cfg_.permuted) mov(rbp, ptr[rdi + offsetof(ActQuantArgs, k_perm)]);
  vmovups(v_abs, pool_.Splat32(0x7FFFFFFF));
  vmovups(v_pos, pool_.Splat32(127));
  vmovups(v_neg, pool_.Splat32(static_cast<uint32_t>(-127)));

  const int lanes = vec_.lanes32();
  const int row_tail = static_cast<int>(RowMaxColumns() % lanes);
  const int group_tail = static_cast<int>(cfg_.group_size % lanes);
  if (vec_.avx512()) {
    mov(eax, (1u << row_tail) - 1);
    kmovw(k1, eax);
    mov(eax, (1u << group_tail) - 1);
    kmovw(k2, eax);
  } else {
    vmovups(vec_.Vec(13), LaneMask(row_tail));
    vmovups(vec_.Vec(14), LaneMask(group_tail));
  }

  Xbyak::Label row_loop, non_finite, next_row;
  L(row_loop);
  if (cfg_.per_group) {
    EmitPerGroupRow();
  } else {
    EmitAbsMax();
    cmp(eax, kF32ExpAllOnes);
    jae(non_finite, T_NEAR);
    // sa = max(amax, 1e-10f) / 127.0f, in f32 exactly as the reference.
    vmovd(xmm9, eax);
    vmaxss(xmm9, xmm9, pool_.Splat32(kF32Bits1e10));
    vdivss(xmm9, xmm9, pool_.Splat32(kF32Bits127));
    vmovss(ptr[kSaRow], xmm9);
    vbroadcastss(v_sa, xmm9);
    EmitQuantizeGroups();
    // r12 is now qa + K: zero the bytes up to RoundUp(K, 4) that the last
    // chunk store may not have reached (group tails shorter than K's tail).
    if (cfg_.k % 4 != 0) mov(dword[kQa], 0);
    jmp(next_row, T_NEAR);

    L(non_finite);
    EmitNonFiniteRow();
  }

  L(next_row);
  add(rsi, rdx);
  add(kQaRow, QaRowStride(cfg_.k));
  add(kSaRow, SaRowStride(groups_, cfg_.per_group));
  add(kSumsRow, SumsRowStride(groups_));
  dec(rcx);
  jnz(row_loop, T_NEAR);
  Postamble();
  pool_.Emit(this);
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
  const int lanes = vec_.lanes32();
  const bool partial = count < lanes;
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
  const bool partial = count < vec_.lanes32();
  const Xmm vmask_all = vec_.Vec(15);
  vmovups(idx, table);
  if (cfg_.act_dtype == DType::kF32) {
    // Lanes left out of the gather keep the zero (row / group padding).
    vpxor(Xmm(v.getIdx()), Xmm(v.getIdx()), Xmm(v.getIdx()));
    if (vec_.avx512()) {
      if (partial) {
        kmovw(k3, kmask);
      } else {
        kxnorw(k3, k3, k3);
      }
      vpgatherdd(v | k3, ptr[rsi + idx * 4]);
    } else {
      if (partial) {
        vmovaps(vmask_all, vmask);
      } else {
        vpcmpeqd(vmask_all, vmask_all, vmask_all);
      }
      vpgatherdd(v, ptr[rsi + idx * 4], vmask_all);
    }
    return;
  }
  // bf16: the dword at x + 2 * k_perm[j] - 2 holds x[k_perm[j]] in its
  // high half. Lanes with k_perm[j] = 0 are left out (that dword would
  // start before x) and keep x[0] from v4; lanes past `count` keep 0.
  const Xmm x0 = vec_.Vec(4);
  if (vec_.avx512()) {
    if (partial) {
      vpcmpgtd(k3 | kmask, idx, pool_.Splat32(0));
      vmovaps(v | kmask | T_z, x0);
    } else {
      vpcmpgtd(k3, idx, pool_.Splat32(0));
      vmovaps(v, x0);
    }
    vpgatherdd(v | k3, ptr[rsi + idx * 2 - 2]);
  } else {
    vpcmpgtd(vmask_all, idx, pool_.Splat32(0));
    if (partial) {
      vpand(vmask_all, vmask_all, vmask);
      vpand(v, x0, vmask);
    } else {
      vmovaps(v, x0);
    }
    vpgatherdd(v, ptr[rsi + idx * 2 - 2], vmask_all);
  }
  vec_.And(v, v, pool_.Splat32(0xFFFF0000));
}

void ActQuantizerGenerator::EmitAbsMax() {
  const int lanes = vec_.lanes32();
  const int64_t full = RowMaxColumns() / lanes;
  const int64_t unrolled = full / 4;
  const int rest = static_cast<int>(full % 4);
  const int tail = static_cast<int>(RowMaxColumns() % lanes);
  const int step = lanes * elem_bytes_;
  const Xmm v_abs = vec_.Vec(4);
  // Act-order bf16 uses v4 for x[0] in pass 2 of the previous row.
  if (cfg_.permuted && cfg_.act_dtype == DType::kBF16) {
    vmovups(v_abs, pool_.Splat32(0x7FFFFFFF));
  }
  // (VEX xor of the xmm clears the whole register at either width.)
  for (int u = 0; u < 4; ++u) vpxor(Xmm(u), Xmm(u), Xmm(u));
  mov(kX, rsi);
  auto one = [&](int u, int offset, int count) {
    const Xmm t = vec_.Vec(9 + u);
    LoadF32(t, kX + offset, count, k1, vec_.Vec(13));
    vec_.And(t, t, v_abs);
    vpmaxsd(vec_.Vec(u), vec_.Vec(u),
            t);  // patterns are >= 0: a signed max works
  };
  if (unrolled > 0) {
    Xbyak::Label loop;
    mov(rbx, unrolled);
    L(loop);
    for (int u = 0; u < 4; ++u) one(u, u * step, lanes);
    add(kX, 4 * step);
    dec(rbx);
    jnz(loop, T_NEAR);
  }
  for (int u = 0; u < rest; ++u) one(u, u * step, lanes);
  if (tail > 0) one(3, rest * step, tail);
  vpmaxsd(vec_.Vec(0), vec_.Vec(0), vec_.Vec(1));
  vpmaxsd(vec_.Vec(2), vec_.Vec(2), vec_.Vec(3));
  vpmaxsd(vec_.Vec(0), vec_.Vec(0), vec_.Vec(2));
  ReduceLanes(0, 1, /*max=*/true);
  vmovd(eax, xmm0);
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

// One chunk of up to `lanes` values at r11 -> int8 at r12, summed into v6.
// `slot` picks independent temporaries so unrolled chunks overlap.
void ActQuantizerGenerator::EmitChunk(int slot, int count, const Opmask& kmask,
                                      const Xmm& vmask) {
  const int lanes = vec_.lanes32();
  const Xmm a = vec_.Vec(slot), b = vec_.Vec(9 + slot);
  const int x_off = slot * lanes * elem_bytes_;
  const int q_off = slot * lanes;
  if (cfg_.permuted) {
    GatherF32(a, b, ptr[kTable + slot * lanes * 4], count, kmask, vmask);
  } else {
    LoadF32(a, kX + x_off, count, kmask, vmask);
  }
  vdivps(a, a, vec_.Vec(5));
  vcvtps2dq(a, a);  // default MXCSR: round half to even
  vpminsd(a, a, vec_.Vec(7));
  vpmaxsd(a, a, vec_.Vec(8));
  vpaddd(vec_.Vec(6), vec_.Vec(6), a);
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
  mov(kX, rsi);
  mov(kQa, kQaRow);
  mov(kSums, kSumsRow);
  mov(kGroupsLeft, groups_);
  if (cfg_.permuted) {
    mov(kTable, rbp);
    if (cfg_.act_dtype == DType::kBF16) {
      // x[0] as f32 bits in every lane: the value of the lane that the
      // gather leaves out (GatherF32).
      movzx(eax, word[rsi]);
      shl(eax, 16);
      vmovd(xmm4, eax);
      vpbroadcastd(vec_.Vec(4), xmm4);
    }
  }
}

void ActQuantizerGenerator::EmitQuantizeGroup() {
  const int lanes = vec_.lanes32();
  const int64_t full = cfg_.group_size / lanes;
  const int64_t unrolled = full / 4;
  const int rest = static_cast<int>(full % 4);
  const int tail = static_cast<int>(cfg_.group_size % lanes);
  vpxor(xmm6, xmm6, xmm6);
  if (unrolled > 0) {
    Xbyak::Label loop;
    mov(rbx, unrolled);
    L(loop);
    for (int u = 0; u < 4; ++u) EmitChunk(u, lanes, k2, vec_.Vec(14));
    add(kX, 4 * lanes * elem_bytes_);
    add(kQa, 4 * lanes);
    if (cfg_.permuted) add(kTable, 4 * lanes * 4);
    dec(rbx);
    jnz(loop, T_NEAR);
  }
  for (int u = 0; u < rest; ++u) EmitChunk(u, lanes, k2, vec_.Vec(14));
  if (rest > 0) AdvanceCursors(rest * lanes);
  if (tail > 0) {
    // The store writes a full chunk: bytes past the group are zeros that
    // the next group overwrites, or the row padding the kernels rely on.
    EmitChunk(0, tail, k2, vec_.Vec(14));
    AdvanceCursors(tail);
  }
  ReduceLanes(6, 9, /*max=*/false);  // -> sums[g]
  vmovd(ptr[kSums], xmm6);
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
  mov(rdi, kSaRow);
  Xbyak::Label group_loop, non_finite, next_group;
  L(group_loop);
  EmitGroupAbsMax();
  cmp(eax, kF32ExpAllOnes);
  jae(non_finite, T_NEAR);
  // sa[g] = max(amax_g, 1e-10f) / 127.0f, as per token.
  vmovd(xmm9, eax);
  vmaxss(xmm9, xmm9, pool_.Splat32(kF32Bits1e10));
  vdivss(xmm9, xmm9, pool_.Splat32(kF32Bits127));
  vmovss(ptr[rdi], xmm9);
  vbroadcastss(vec_.Vec(5), xmm9);
  EmitQuantizeGroup();
  jmp(next_group, T_NEAR);
  L(non_finite);
  EmitNonFiniteGroup();
  L(next_group);
  add(kSums, 4);
  add(rdi, 4);
  dec(kGroupsLeft);
  jnz(group_loop, T_NEAR);
  // As per token: zero the bytes up to RoundUp(K, 4).
  if (cfg_.k % 4 != 0) mov(dword[kQa], 0);
}

// Max of |x| bit patterns over the group at the cursors, two chunks at a
// time into v0 / v1 (temporaries v9 / v10, gather indices v11 / v12); the
// x and table cursors end where they started, the qa cursor is not used.
void ActQuantizerGenerator::EmitGroupAbsMax() {
  const int lanes = vec_.lanes32();
  const int64_t full = cfg_.group_size / lanes;
  const int tail = static_cast<int>(cfg_.group_size % lanes);
  const Address abs_mask = pool_.Splat32(0x7FFFFFFF);
  vpxor(xmm0, xmm0, xmm0);
  vpxor(xmm1, xmm1, xmm1);
  // Chunk `at` (in chunks from the cursors) into accumulator u.
  auto one = [&](int u, int at, int count) {
    const Xmm t = vec_.Vec(9 + u);
    if (cfg_.permuted) {
      GatherF32(t, vec_.Vec(11 + u), ptr[kTable + at * lanes * 4], count, k2,
                vec_.Vec(14));
    } else {
      LoadF32(t, kX + at * lanes * elem_bytes_, count, k2, vec_.Vec(14));
    }
    vec_.And(t, t, abs_mask);
    vpmaxsd(vec_.Vec(u), vec_.Vec(u), t);  // patterns >= 0: signed max
  };
  if (full / 2 > 0) {
    Xbyak::Label loop;
    mov(rbx, full / 2);
    L(loop);
    one(0, 0, lanes);
    one(1, 1, lanes);
    add(kX, 2 * lanes * elem_bytes_);
    if (cfg_.permuted) add(kTable, 2 * lanes * 4);
    dec(rbx);
    jnz(loop, T_NEAR);
  }
  if (full % 2 != 0) {
    one(0, 0, lanes);
    add(kX, lanes * elem_bytes_);
    if (cfg_.permuted) add(kTable, lanes * 4);
  }
  if (tail > 0) one(1, 0, tail);
  if (full > 0) {  // back to the group start
    sub(kX, full * lanes * elem_bytes_);
    if (cfg_.permuted) sub(kTable, full * lanes * 4);
  }
  vpmaxsd(vec_.Vec(0), vec_.Vec(0), vec_.Vec(1));
  ReduceLanes(0, 1, /*max=*/true);
  vmovd(eax, xmm0);
}

// A group with NaN or Inf: sa[g] = NaN, its qa (the extent pass 2 stores)
// and sums[g] 0; the cursors move past the group.
void ActQuantizerGenerator::EmitNonFiniteGroup() {
  const int lanes = vec_.lanes32();
  const int64_t chunks = (cfg_.group_size + lanes - 1) / lanes;
  mov(dword[rdi], kF32QuietNan);
  mov(dword[kSums], 0);
  vpxor(xmm9, xmm9, xmm9);
  Xbyak::Label loop;
  mov(rbx, chunks);
  L(loop);
  if (vec_.avx512()) {
    vmovdqu(ptr[kQa], xmm9);  // 16 bytes, as vpmovsdb stores
  } else {
    vmovq(ptr[kQa], xmm9);  // 8 bytes, as pass 2 stores
  }
  add(kQa, lanes);
  dec(rbx);
  jnz(loop, T_NEAR);
  // r12 moved by chunks * lanes; pass 2 would have moved it by the group.
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
  const Xmm zero = vec_.Vec(9);
  vpxor(xmm9, xmm9, xmm9);
  Xbyak::Label qa_loop, sum_loop;
  mov(rax, kQaRow);
  mov(rbx, (cfg_.k + vec_.bytes() - 1) / vec_.bytes());
  L(qa_loop);
  vmovups(ptr[rax], zero);
  add(rax, vec_.bytes());
  dec(rbx);
  jnz(qa_loop, T_NEAR);
  mov(rax, kSumsRow);
  mov(rbx, groups_);
  L(sum_loop);
  mov(dword[rax], 0);
  add(rax, 4);
  dec(rbx);
  jnz(sum_loop, T_NEAR);
}

absl::Status CheckActQuantConfig(const ActQuantConfig& c) {
  if (TraitsOf(c.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError("the quantizer needs AVX2 or AVX-512");
  }
  if (c.k <= 0 || c.group_size <= 0 || c.k % c.group_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quantizer: group ", c.group_size, " does not divide K = ", c.k));
  }
  if (c.act_dtype != DType::kF32 && c.act_dtype != DType::kBF16) {
    return absl::InvalidArgumentError("quantizer: x must be bf16 or f32");
  }
  if (c.x_k != 0 && (!c.permuted || c.x_k < 1 || c.x_k > c.k)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantizer: x_k = ", c.x_k,
                     " needs act-order and 1 <= x_k <= K = ", c.k));
  }
  return absl::OkStatus();
}

}  // namespace w4jit::internal
