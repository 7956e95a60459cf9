// The nibble decode shared by the W4A16 f32-FMA kernels (the int4 kernel
// and the panel dequantizer), so both read the packed layout of
// runtime/w4a16_pack.h the same way.
#ifndef W4JIT_JIT_W4A16_DECODE_H_
#define W4JIT_JIT_W4A16_DECODE_H_

#include "jit/emit_util.h"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

// Loads one vector of packed bytes (lanes bytes at `src`: one column per
// byte, k = 2p in the low nibble, k = 2p + 1 in the high one) and leaves
// the exact f32 values (u - z) for k = 2p in `even` and k = 2p + 1 in
// `odd`. `mask` holds 0xF in every 32-bit lane, `zero` the zero point of
// each column (a register or memory; 8 for s4). Integer subtraction before
// the conversion keeps (u - z) exact; 7 instructions for 2 vectors:
// vpmovzxbd, vpsrld, vpand, 2 vpsubd, 2 vcvtdq2ps.
void EmitDecodeNibblePairsF32(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                              const Xbyak::Address& src, const Xbyak::Xmm& even,
                              const Xbyak::Xmm& odd, const Xbyak::Operand& mask,
                              const Xbyak::Operand& zero);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_DECODE_H_
