#include "jit/emit_util.h"

#include "absl/strings/str_cat.h"

namespace w4jit::internal {

using Xbyak::Xmm;
using Xbyak::util::ptr;
using Xbyak::util::ptr_b;
using Xbyak::util::rip;

Xbyak::Address ConstPool::At(size_t index) {
  return ptr[rip + label_ + static_cast<int>(index * 64)];
}

Xbyak::Address ConstPool::Splat32(uint32_t value) {
  std::array<uint32_t, 16> data;
  data.fill(value);
  return Table(data);
}

Xbyak::Address ConstPool::Splat16(uint16_t value) {
  return Splat32(static_cast<uint32_t>(value) * 0x10001u);
}

Xbyak::Address ConstPool::Table(const std::array<uint32_t, 16>& data) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i] == data) return At(i);
  }
  entries_.push_back(data);
  return At(entries_.size() - 1);
}

void ConstPool::Emit(Xbyak::CodeGenerator* g) {
  if (entries_.empty()) return;
  g->align(64);
  g->L(label_);
  for (const auto& entry : entries_) {
    for (uint32_t v : entry) g->dd(v);
  }
}

Xmm VecEmitter::Vec(int idx) const {
  if (avx512_) return Xbyak::Zmm(idx);
  return Xbyak::Ymm(idx);
}

Xmm VecEmitter::Half(int idx) const {
  if (avx512_) return Xbyak::Ymm(idx);
  return Xbyak::Xmm(idx);
}

void VecEmitter::And(const Xmm& d, const Xmm& a,
                     const Xbyak::Operand& b) const {
  if (avx512_) {
    g_->vpandd(d, a, b);
  } else {
    g_->vpand(d, a, b);
  }
}

void VecEmitter::Or(const Xmm& d, const Xmm& a, const Xbyak::Operand& b) const {
  if (avx512_) {
    g_->vpord(d, a, b);
  } else {
    g_->vpor(d, a, b);
  }
}

void VecEmitter::FmaBroadcast(const Xmm& acc, const Xmm& w,
                              const Xbyak::RegExp& scalar,
                              const Xmm& tmp) const {
  if (avx512_) {
    g_->vfmadd231ps(acc, w, ptr_b[scalar]);
  } else {
    g_->vbroadcastss(tmp, ptr[scalar]);
    g_->vfmadd231ps(acc, w, tmp);
  }
}

void VecEmitter::LoadTailMask(int count, const Xbyak::Reg32& gpr_tmp) const {
  g_->mov(gpr_tmp, (1u << count) - 1);
  g_->kmovw(Xbyak::Opmask(7), gpr_tmp);
}

void VecEmitter::StorePartialXmm(const Xbyak::RegExp& dst, const Xmm& x,
                                 int bytes) const {
  int off = 0;
  if (bytes - off >= 8) {
    g_->vmovq(ptr[dst + off], x);
    off += 8;
    if (off < bytes) g_->vpsrldq(x, x, 8);
  }
  if (bytes - off >= 4) {
    g_->vmovd(ptr[dst + off], x);
    off += 4;
    if (off < bytes) g_->vpsrldq(x, x, 4);
  }
  if (bytes - off >= 2) {
    g_->vpextrw(ptr[dst + off], x, 0);
  }
}

void VecEmitter::StoreF32(const Xbyak::RegExp& dst, const Xmm& v, int count,
                          const Xmm& tmp, const Xbyak::Reg32& gpr_tmp) const {
  if (count >= lanes32()) {
    g_->vmovups(ptr[dst], v);
    return;
  }
  if (avx512_) {
    LoadTailMask(count, gpr_tmp);
    g_->vmovups(ptr[dst] | Xbyak::Opmask(7), v);
    return;
  }
  Xmm low(v.getIdx());
  if (count >= 4) {
    g_->vmovups(ptr[dst], low);
    if (count == 4) return;
    g_->vextractf128(Xmm(tmp.getIdx()), Xbyak::Ymm(v.getIdx()), 1);
    StorePartialXmm(dst + 16, Xmm(tmp.getIdx()), (count - 4) * 4);
    return;
  }
  StorePartialXmm(dst, low, count * 4);
}

void VecEmitter::StoreBf16(const Xbyak::RegExp& dst, const Xmm& v, int count,
                           const Xmm& t0, const Xmm& t1,
                           const Xbyak::Reg32& gpr_tmp, ConstPool* pool) const {
  // Round to nearest even: (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16.
  g_->vpsrld(t0, v, 16);
  And(t0, t0, pool->Splat32(1));
  g_->vpaddd(t0, t0, pool->Splat32(0x7FFF));
  g_->vpaddd(t0, t0, v);
  g_->vpsrld(t0, t0, 16);
  // NaN: keep the upper half and set the quiet bit.
  g_->vpsrld(t1, v, 16);
  if (avx512_) {
    const Xbyak::Opmask nan(6);
    g_->vcmpunordps(nan, v, v);
    g_->vpord(t0 | nan, t1, pool->Splat32(0x40));
    g_->vpmovdw(Xbyak::Ymm(t0.getIdx()), Xbyak::Zmm(t0.getIdx()));
    // EVEX moves: t0 may be one of ymm16-31.
    if (count >= 16) {
      g_->vmovdqu16(ptr[dst], Xbyak::Ymm(t0.getIdx()));
    } else {
      LoadTailMask(count, gpr_tmp);
      g_->vmovdqu16(ptr[dst] | Xbyak::Opmask(7), Xbyak::Ymm(t0.getIdx()));
    }
    return;
  }
  g_->vpor(t1, t1, pool->Splat32(0x40));
  g_->vcmpunordps(v, v, v);
  g_->vblendvps(t0, t0, t1, v);
  // 8 dwords (each < 0x10000) to 8 words in order.
  g_->vextracti128(Xmm(t1.getIdx()), Xbyak::Ymm(t0.getIdx()), 1);
  g_->vpackusdw(Xmm(t0.getIdx()), Xmm(t0.getIdx()), Xmm(t1.getIdx()));
  if (count >= 8) {
    g_->vmovdqu(ptr[dst], Xmm(t0.getIdx()));
  } else {
    StorePartialXmm(dst, Xmm(t0.getIdx()), count * 2);
  }
}

void EmitLoadWidenedF32(Xbyak::CodeGenerator* g, DType t,
                        const Xbyak::Address& src, const Xbyak::Xmm& dst) {
  switch (t) {
    case DType::kF32:
      g->vmovups(dst, src);
      return;
    case DType::kBF16:
      g->vpmovzxwd(dst, src);
      g->vpslld(dst, dst, 16);
      return;
    case DType::kF16:
      g->vcvtph2ps(dst, src);
      return;
  }
}

void EmitRowTiles(Xbyak::CodeGenerator* g, const Xbyak::Reg64& rows_left,
                  int mr_max, const std::function<void(int mr)>& tile,
                  const std::function<void(int mr)>& advance) {
  Xbyak::Label rows, rest, done;
  g->L(rows);
  if (mr_max > 1) {
    g->cmp(rows_left, mr_max);
    g->jl(rest, Xbyak::CodeGenerator::T_NEAR);
  }
  tile(mr_max);
  advance(mr_max);
  g->sub(rows_left, mr_max);
  g->jnz(rows, Xbyak::CodeGenerator::T_NEAR);
  g->jmp(done, Xbyak::CodeGenerator::T_NEAR);
  g->L(rest);
  for (int mr = mr_max - 1; mr >= 1; --mr) {
    Xbyak::Label next;
    g->cmp(rows_left, mr);
    g->jne(next, Xbyak::CodeGenerator::T_NEAR);
    tile(mr);
    g->jmp(done, Xbyak::CodeGenerator::T_NEAR);
    g->L(next);
  }
  g->L(done);
}

absl::Status CheckPrefetchDistance(int distance) {
  if (distance < 0 || distance % 64 != 0 || distance > kMaxPrefetchDistance) {
    return absl::InvalidArgumentError(absl::StrCat(
        "prefetch distance ", distance, " is not a multiple of 64 in [0, ",
        kMaxPrefetchDistance, "]"));
  }
  return absl::OkStatus();
}

void EmitStreamPrefetch(Xbyak::CodeGenerator* g, const Xbyak::RegExp& base,
                        int64_t offset, int64_t bytes, int64_t distance) {
  if (distance == 0) return;
  constexpr int64_t kLine = 64;
  for (int64_t o = (offset + kLine - 1) / kLine * kLine; o < offset + bytes;
       o += kLine) {
    g->prefetcht0(g->ptr[base + static_cast<uint32_t>(o + distance)]);
  }
}

void EmitRoundToBf16InPlace(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                            const Xbyak::Xmm& v, const Xbyak::Xmm& t0,
                            const Xbyak::Xmm& t1, ConstPool* pool) {
  // The upper half of bits + 0x7FFF + ((bits >> 16) & 1); a NaN becomes
  // its upper half with the quiet bit set.
  g->vpsrld(t0, v, 16);
  vec.And(t0, t0, pool->Splat32(1));
  g->vpaddd(t0, t0, pool->Splat32(0x7FFF));
  g->vpaddd(t0, t0, v);
  if (vec.bytes() == 64) {
    const Xbyak::Opmask nan(6);
    g->vcmpunordps(nan, v, v);
    g->vpord(t0 | nan, v, pool->Splat32(0x00400000u));
  } else {
    g->vcmpunordps(t1, v, v);
    g->vpor(v, v, pool->Splat32(0x00400000u));
    g->vblendvps(t0, t0, v, t1);
  }
  vec.And(v, t0, pool->Splat32(0xFFFF0000u));
}

}  // namespace w4jit::internal
