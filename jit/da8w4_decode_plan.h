// The register plan of the DA8W4 panel decoder
// (jit/da8w4_decode_generator.h): its vector and general-purpose register
// roles and the unroll they are sized for. The generator places its
// registers by it and names nothing else.
//
// Vector registers: the 0x0F mask, then per quad of an unrolled iteration
// its two halves (the loaded quad, shifted into the high nibbles' bytes,
// and the low nibbles' bytes). 1 + 2 * kUnroll registers: within AVX2's
// sixteen, so that one plan serves both widths.
#ifndef W4JIT_JIT_DA8W4_DECODE_PLAN_H_
#define W4JIT_JIT_DA8W4_DECODE_PLAN_H_

#include "xbyak/xbyak.h"

namespace w4jit::internal {

struct Da8w4DecodePlan {
  // Quads per unrolled iteration: enough independent loads and stores in
  // flight to keep the loop overhead out of the way.
  static constexpr int kUnroll = 4;
  static constexpr int kMask = 0;  // 0x0F in every byte
  static constexpr int kLow = 1;   // + 2q: quad q's low nibbles
  static constexpr int kHigh = 2;  // + 2q: quad q's loaded bytes, then high
  static constexpr int kUsed = 1 + 2 * kUnroll;

  static constexpr int Low(int q) { return kLow + 2 * q; }
  static constexpr int High(int q) { return kHigh + 2 * q; }
};
static_assert(Da8w4DecodePlan::kUsed <= 16,
              "the decoder's registers fit AVX2's sixteen");

// General-purpose register roles (the arguments' rdi is read once; the
// decoder saves nothing: every role is caller-saved).
namespace da8w4_decode_gpr {
using Xbyak::Operand;
inline constexpr Xbyak::Reg64 kArgs(Operand::RDI);       // Da8w4DecodeArgs
inline constexpr Xbyak::Reg64 kSrc(Operand::RSI);        // packed quads
inline constexpr Xbyak::Reg64 kDst(Operand::RDX);        // decoded bytes
inline constexpr Xbyak::Reg64 kQuadsLeft(Operand::RCX);  // quads left
}  // namespace da8w4_decode_gpr

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_DECODE_PLAN_H_
