// Emitter helpers shared by generators that write one piece of logic for
// both vector widths: 256-bit AVX2 (ymm, 16 registers, VEX forms) and
// 512-bit AVX-512 (zmm, 32 registers, EVEX forms), as the tier's row of
// dispatch/isa_traits.h says. A generator writes its
// loops once over VecEmitter::Vec(i); only the few instructions whose forms
// differ between the widths (logic ops, compares, broadcasts, packing,
// partial stores) go through VecEmitter, so the AVX2 tests that run on any
// machine exercise the code the AVX-512 variant emits.
//
// Register conventions: on AVX-512 the helpers use opmask registers k6 and
// k7; generators must leave those to them.
#ifndef W4JIT_JIT_EMIT_UTIL_H_
#define W4JIT_JIT_EMIT_UTIL_H_

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "dispatch/isa_traits.h"
#include "w4jit/types.hpp"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

// Constants the kernel reads from memory, emitted after the code (the pages
// are read+execute, which reading needs). Each entry is 64 bytes, so it is
// a full vector operand of either width, or a broadcast source.
class ConstPool {
 public:
  // A vector whose 32-bit lanes all hold `value`.
  Xbyak::Address Splat32(uint32_t value);
  // A vector whose 16-bit lanes all hold `value`.
  Xbyak::Address Splat16(uint16_t value);
  // 64 bytes of arbitrary data (e.g. a vpermw table).
  Xbyak::Address Table(const std::array<uint32_t, 16>& data);
  // Writes the constants (64-byte aligned) at the current position; call
  // once, after the function's last instruction.
  void Emit(Xbyak::CodeGenerator* g);

 private:
  Xbyak::Address At(size_t index);
  Xbyak::Label label_;
  std::vector<std::array<uint32_t, 16>> entries_;
};

class VecEmitter {
 public:
  // The tier's vectors (dispatch/isa_traits.h): ymm for AVX2, zmm for the
  // AVX-512 tiers; a JIT tier, never kRef.
  VecEmitter(Xbyak::CodeGenerator* g, IsaTier tier)
      : g_(g),
        traits_(TraitsOf(tier)),
        avx512_(traits_.Has(IsaFeature::kAvx512)) {}

  bool avx512() const { return avx512_; }
  int bytes() const { return traits_.vector_bytes; }
  int lanes32() const { return traits_.lanes32(); }
  int num_regs() const { return traits_.vector_regs; }
  // ymm(idx) or zmm(idx).
  Xbyak::Xmm Vec(int idx) const;
  // The register of half the width: xmm(idx) or ymm(idx), e.g. where
  // 16-bit results of a full vector of 32-bit lanes end up.
  Xbyak::Xmm Half(int idx) const;

  // d = a & b, d = a | b (vpand/vpor or vpandd/vpord).
  void And(const Xbyak::Xmm& d, const Xbyak::Xmm& a,
           const Xbyak::Operand& b) const;
  void Or(const Xbyak::Xmm& d, const Xbyak::Xmm& a,
          const Xbyak::Operand& b) const;

  // acc += w * broadcast(f32 at `scalar`). AVX-512 uses an embedded
  // broadcast; AVX2 broadcasts into `tmp` first.
  void FmaBroadcast(const Xbyak::Xmm& acc, const Xbyak::Xmm& w,
                    const Xbyak::RegExp& scalar, const Xbyak::Xmm& tmp) const;

  // Stores lanes [0, count) of f32 vector v to dst (count in [1, lanes]);
  // never touches memory past them. v and tmp may be clobbered.
  void StoreF32(const Xbyak::RegExp& dst, const Xbyak::Xmm& v, int count,
                const Xbyak::Xmm& tmp, const Xbyak::Reg32& gpr_tmp) const;

  // Rounds the f32 lanes of v to bf16, nearest-even, NaN stays a quiet NaN
  // (bit for bit what F32ToBf16 in base/numeric.h does, with integer ops
  // so that it needs no AVX512_BF16 and keeps denormals), and stores lanes
  // [0, count) to dst as 2-byte elements. v, t0 and t1 are clobbered.
  void StoreBf16(const Xbyak::RegExp& dst, const Xbyak::Xmm& v, int count,
                 const Xbyak::Xmm& t0, const Xbyak::Xmm& t1,
                 const Xbyak::Reg32& gpr_tmp, ConstPool* pool) const;

 private:
  // Stores the low `bytes` bytes of xmm x (bytes < 16, power-of-two pieces),
  // shifting x down as it goes.
  void StorePartialXmm(const Xbyak::RegExp& dst, const Xbyak::Xmm& x,
                       int bytes) const;
  // Loads a mask of the low `count` bits into k7.
  void LoadTailMask(int count, const Xbyak::Reg32& gpr_tmp) const;

  Xbyak::CodeGenerator* g_;
  const IsaTraits& traits_;
  bool avx512_;  // EVEX forms, opmasks (IsaFeature::kAvx512)
};

// Loads one vector of lanes scales (or float zero points) of dtype `t` at
// `src` into `dst`, widened exactly to f32 (runtime/scale_storage.h): f32
// a plain load; bf16 vpmovzxwd and a shift left by 16; f16 vcvtph2ps
// (F16C).
void EmitLoadWidenedF32(Xbyak::CodeGenerator* g, DType t,
                        const Xbyak::Address& src, const Xbyak::Xmm& dst);

// Emits the row loop of a kernel whose register tile holds up to mr_max
// rows: while rows_left >= mr_max, tile(mr_max) then advance(mr_max); the
// last rows_left % mr_max rows get one tile of exactly that height
// (tile(mr) for mr < mr_max, selected at run time). rows_left (a GPR, >= 1
// on entry) is consumed; tile and advance must preserve it.
void EmitRowTiles(Xbyak::CodeGenerator* g, const Xbyak::Reg64& rows_left,
                  int mr_max, const std::function<void(int mr)>& tile,
                  const std::function<void(int mr)>& advance);

// Software prefetch for a kernel streaming its weights: for the bytes
// [offset, offset + bytes) of the stream at `base` that one step of the
// kernel reads, one prefetcht0 per 64-byte line boundary in that range,
// `distance` bytes ahead. Nothing when distance is 0 (off).
// The largest prefetch distance the kernels take (bytes).
inline constexpr int kMaxPrefetchDistance = 16384;
// OK if `distance` is a multiple of 64 in [0, kMaxPrefetchDistance].
absl::Status CheckPrefetchDistance(int distance);
void EmitStreamPrefetch(Xbyak::CodeGenerator* g, const Xbyak::RegExp& base,
                        int64_t offset, int64_t bytes, int64_t distance);

// Rounds the f32 lanes of v to bf16 in place and widens them back to f32
// (the low 16 bits cleared): bit for bit Bf16ToF32(F32ToBf16(v)) of
// base/numeric.h (nearest even; a NaN stays a quiet NaN). Integer ops, so
// it needs no AVX512_BF16. For Numerics::kZentorch's dequantized weights
// (W4a16DequantConfig::round_weights_bf16). t0 and t1 (AVX2 only; AVX-512
// uses k6) are clobbered.
void EmitRoundToBf16InPlace(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                            const Xbyak::Xmm& v, const Xbyak::Xmm& t0,
                            const Xbyak::Xmm& t1, ConstPool* pool);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_EMIT_UTIL_H_
