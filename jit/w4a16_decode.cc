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

void EmitDecodeBytePairF32(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                           bool symmetric, const Xbyak::Address& src,
                           const Xbyak::Xmm& lo, const Xbyak::Xmm& byte,
                           const Xbyak::Operand& mask_lo) {
  if (symmetric) {
    g->vpmovsxbd(byte, src);
  } else {
    g->vpmovzxbd(byte, src);
  }
  vec.And(lo, byte, mask_lo);
  g->vcvtdq2ps(lo, lo);
  g->vcvtdq2ps(byte, byte);
}

}  // namespace w4jit::internal
