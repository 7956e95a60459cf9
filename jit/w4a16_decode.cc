#include "jit/w4a16_decode.h"

namespace w4jit::internal {

void EmitDecodeNibblePairsF32(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                              bool symmetric, const Xbyak::Address& src,
                              const Xbyak::Xmm& even, const Xbyak::Xmm& odd,
                              const NibbleDecodeOperands& ops) {
  if (symmetric) {
    g->vpmovsxbd(even, src);
  } else {
    g->vpmovzxbd(even, src);
  }
  vec.And(odd, even, *ops.mask_hi);
  vec.And(even, even, *ops.mask_lo);
  g->vpsubd(even, even, *ops.zero);
  if (!symmetric) g->vpsubd(odd, odd, *ops.zero16);
  g->vcvtdq2ps(even, even);
  g->vcvtdq2ps(odd, odd);
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
