// The nibble decodes of the W4A16 f32-FMA kernels (the panel dequantizer
// and the int4 kernel), beside each other because both read the packed
// layout of jit/w4a16_layout.h.
#ifndef W4JIT_JIT_W4A16_DECODE_H_
#define W4JIT_JIT_W4A16_DECODE_H_

#include "jit/emit_util.h"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

// The dequantizer's: loads one vector of packed bytes (lanes bytes at `src`,
// one column per byte, k = 2p in the low nibble, k = 2p + 1 in the high one)
// and leaves exact f32 values of (u - z) for k = 2p in `even` and of 16 * (u -
// z) for k = 2p + 1 in `odd`: the packed activations hold x[2p + 1] / 16
// (PackRowsF32), so the products are those of (u - z) * x, bit for bit.
// Masking the high nibble in place instead of shifting it down matters on
// Zen 3, where shifts and shuffles share two of the four vector pipes and
// bound the decode (measured).
//
// u4 (asymmetric): bytes hold u. `mask_lo` is 0x0F and `mask_hi` 0xF0 in
// every 32-bit lane, `zero` / `zero16` the columns' z and 16 * z: vpmovzxbd,
// 2 vpand, 2 vpsubd, 2 vcvtdq2ps.
// s4 (symmetric): the high nibble holds q = u - 8 in two's complement and
// the low one u (the packer stores u ^ 0x80), so after sign extension
// d & ~15 is 16 * q_hi: vpmovsxbd, 2 vpand (`mask_hi` = 0xFFFFFFF0), one
// vpsubd of `zero` = 8, 2 vcvtdq2ps.
struct NibbleDecodeOperands {
  const Xbyak::Operand* mask_lo;
  const Xbyak::Operand* mask_hi;
  const Xbyak::Operand* zero;
  const Xbyak::Operand* zero16;  // u4 only
};
void EmitDecodeNibblePairsF32(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                              bool symmetric, const Xbyak::Address& src,
                              const Xbyak::Xmm& even, const Xbyak::Xmm& odd,
                              const NibbleDecodeOperands& ops);

// The int4 kernel's decode (jit/w4a16_layout.h, F32Int4RowSlots): loads one
// vector of packed bytes as above and leaves exact f32 values of the low
// nibble lo in `lo` and of the whole byte d in `byte` (16 * q_hi + lo,
// sign-extended, for s4; 16 * u_hi + lo for u4), which the kernel
// multiplies with x[2p] - x[2p + 1] / 16 and x[2p + 1] / 16. `mask_lo` is
// 0x0F in every 32-bit lane. vpmovsxbd / vpmovzxbd, one vpand, 2
// vcvtdq2ps: no zero point, no mask of the high nibble.
void EmitDecodeBytePairF32(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                           bool symmetric, const Xbyak::Address& src,
                           const Xbyak::Xmm& lo, const Xbyak::Xmm& byte,
                           const Xbyak::Operand& mask_lo);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_DECODE_H_
