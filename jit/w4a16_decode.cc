#include "jit/w4a16_decode.h"

namespace w4jit::internal {

void EmitDecodeNibblePairsF32(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                              const Xbyak::Address& src, const Xbyak::Xmm& even,
                              const Xbyak::Xmm& odd, const Xbyak::Operand& mask,
                              const Xbyak::Operand& zero) {
  g->vpmovzxbd(even, src);
  g->vpsrld(odd, even, 4);  // the byte was zero-extended: no mask needed
  if (vec.avx512()) {
    g->vpandd(even, even, mask);
  } else {
    g->vpand(even, even, mask);
  }
  g->vpsubd(even, even, zero);
  g->vpsubd(odd, odd, zero);
  g->vcvtdq2ps(even, even);
  g->vcvtdq2ps(odd, odd);
}

}  // namespace w4jit::internal
