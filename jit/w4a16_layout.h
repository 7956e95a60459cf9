// The byte layout of the packed weights the W4A16 kernels read
// (runtime/w4a16/w4a16_pack.h fills it). Defined here, beside the generators,
// because the emitted code is what fixes it; the packing code follows.
//
// Weights are cut into column blocks of NB = lanes * nv output channels
// (the last block padded with zero weights). Within a block:
//
//  f32-FMA flavour: for each pair of k (2p, 2p+1), NB bytes; byte j holds
//    u[n0 + j][2p] in the low nibble and u[n0 + j][2p + 1] in the high one;
//    for s4 the high nibble is q = u - 8 in two's complement (byte XOR
//    0x80). `vpmovzxbd` / `vpmovsxbd` of L bytes gives one vector of both
//    (jit/w4a16_decode.h).
//  bf16-dot flavour: for each k octet (8o .. 8o + 7) and each vector of 16
//    columns, 64 bytes: one zmm of 32 words, column c's in word 2c (k even)
//    and 2c + 1 (k odd). Nibble j of word 2c holds k = 8o + 2j, of word
//    2c + 1 k = 8o + 2j + 1, so the words shifted right by 4j hold k pair
//    4o + j, one dword per column (what vdpbf16ps multiplies), in their
//    low nibbles. In bytes: byte 4c + 2e + h holds k = 8o + e + 4h in its
//    low nibble and k + 2 in its high one (e, h in {0, 1}). The group size
//    must be a multiple of 8 (else the layer uses the f32-FMA flavour).
//
// Per block and group the kernel reads NB f32 scales and, for u4, the zero
// points right after them ("meta", MetaVectorsPerGroup); the bias is padded
// to whole blocks.
//
// 16-bit meta (meta_dtype bf16 or f16): where every scale (and float zero
// point) the meta holds is exact in bf16, or else in f16 (as the
// checkpoint's 16-bit scales are), the meta stores them in it and the
// kernels widen them exactly (bf16: zero-extend and shift left by 16; f16:
// vcvtph2ps). At group 128 f32 scales are 1/16 of the s4 weight stream,
// at group 32 a quarter; 16-bit halves that. Not for integer zero points
// (the f32-FMA u4 meta holds z as integers), nor for float zero points
// with the f32-FMA flavour (its dequantizer adds zf from memory; the
// bf16-dot flavour takes them when they are exact, and its folded u4 ones
// always, below).
//
// Integer zero points with the bf16-dot flavour are packed as float ones,
// zf = (8 - z) * s (rounded to f32), so that the dot kernel decodes every
// layer as s4 (w = (u - 8) * s + zf equals (u - z) * s; numerics.md allows
// the fold). Decoding u - z per k pair instead (mask, add, then the table)
// made u4 1.7x slower than s4 at M = 1 on Zen 4. The meta holds 8 - z in
// zf's place (`folded_zero`; exact in any meta dtype) and the kernel forms
// zf = (8 - z) * s at the group end, the same f32 product: so the meta can
// be 16-bit whenever the scales are.
//
// Float zero points (ZeroPointDomain::kFloat, w = (u - 8) * s + zf): the
// nibbles are packed as for s4 (the decode gives u - 8) and the meta holds
// zf after the scales (both flavours) and 16 * zf after that (f32 FMA, for
// the dequantized panel's odd k). The int4 kernel adds zf * sum_{k in g} x
// per group, reading the sums from the packed rows
// (runtime/w4a16/w4a16_pack.h); the dequantizer adds zf to each dequantized
// weight.
#ifndef W4JIT_JIT_W4A16_LAYOUT_H_
#define W4JIT_JIT_W4A16_LAYOUT_H_

#include <cstdint>

#include "base/numeric.h"
#include "dispatch/kernel_key.h"

namespace w4jit::internal {

// Packed rows of the f32-FMA int4 kernel (W4a16GemvGenerator, filled by
// PackRowsF32 with F32RowFormat::kInt4Pairs). The kernel widens each weight
// byte d of a k pair (2p, 2p + 1) to one dword and takes two vectors from
// it: the low nibble lo = d & 15, and d itself, which is 16 * q_hi + lo for
// s4 (sign-extended; the high nibble holds q_hi = u_hi - 8 in two's
// complement, the low one u_lo = q_lo + 8) and 16 * u_hi + lo for u4
// (zero-extended). The rows hold
//   x'[2p] = x[2p] - x[2p + 1] / 16,   x'[2p + 1] = x[2p + 1] / 16,
// so that, exactly in real arithmetic,
//   u4: (lo - z) x[2p] + (u_hi - z) x[2p + 1]
//         = lo * x'[2p] + d * x'[2p + 1] - z (x[2p] + x[2p + 1])
//   s4: q_lo x[2p] + q_hi x[2p + 1] = lo * x'[2p] + d * x'[2p + 1] - 8 x[2p]
// and the zero point moves out of the k loop into the group's first value
// of the accumulator: -8 * sum_{even k in g} x (s4) or -z * sum_{k in g} x
// (u4), from slots after the group's elements. The decode is then one
// widening load, one vpand and two conversions per 2 * lanes weights,
// against two vpand, one or two vpsubd and the same load and conversions
// for (u - z) itself; on Zen 3 the decode's vector ops are the int4
// kernel's limit at M = 1. numerics.md allows the fold: the sum differs
// from sum (u - z) x only by f32 rounding. (The panel dequantizer keeps
// exact (u - z) values: jit/w4a16_decode.h.)
struct F32Int4RowSlots {
  bool neg8_even_sum = false;  // -8 * sum_{even k in g} x: s4 decode
  bool sum = false;  // sum_{k in g} x: u4 (times -z), float zero (times zf)
  int count() const { return (neg8_even_sum ? 1 : 0) + (sum ? 1 : 0); }
  // Slot of the sum among a group's slots (each `rows` f32, rows of the
  // packed row group).
  int sum_index() const { return neg8_even_sum ? 1 : 0; }
};
// The slots of a layout with integer zero points (`u4`) or float ones
// (decoded as s4, zf * sum added at the group end).
inline F32Int4RowSlots F32Int4Slots(bool u4, bool float_zero) {
  F32Int4RowSlots s;
  s.neg8_even_sum = !u4;
  s.sum = u4 || float_zero;
  return s;
}

// Per group and column block the kernels read "meta": NB f32 scales, then
// for u4 the zero points (f32 FMA: z and 16 * z; the dot flavour folds them
// into float ones), or the float zero points (f32 FMA: zf and 16 * zf; bf16
// dot: zf). This is how many NB-element vectors that is.
inline int MetaVectorsPerGroup(bool bf16_dot, bool zero_points) {
  if (!zero_points) return 1;
  return bf16_dot ? 2 : 3;
}

struct W4a16Layout {
  Flavor flavor = Flavor::kF32Fma;
  int lanes = 8;  // 32-bit lanes of a vector: 8 (ymm) or 16 (zmm)
  int nv = 4;     // vectors per column block
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 0;   // resolved (K for per-channel)
  bool asymmetric = false;  // integer u4 zero points (u4 packing)
  bool float_zero = false;  // float zero points (s4 packing, zf in meta)
  // float_zero from folded u4 zero points: the meta holds 8 - z (above).
  bool folded_zero = false;
  DType meta_dtype = DType::kF32;  // f32, or bf16 / f16 (above)

  int64_t groups() const { return k / group_size; }
  int64_t block_n() const { return int64_t{lanes} * nv; }
  int64_t blocks() const { return (n + block_n() - 1) / block_n(); }
  int64_t block_weight_bytes() const { return k / 2 * block_n(); }
  // Bytes of one meta element: 4, or 2 for 16-bit meta.
  int64_t meta_size() const {
    return static_cast<int64_t>(DTypeSize(meta_dtype));
  }
  // Bytes of meta per group of one block.
  int64_t group_meta_bytes() const {
    return block_n() * meta_size() *
           MetaVectorsPerGroup(flavor == Flavor::kBf16Dot,
                               asymmetric || float_zero);
  }
  int64_t block_meta_bytes() const { return groups() * group_meta_bytes(); }
};

// Whether a layout may store its meta as 16-bit floats (above): no integer
// zero points, and float zero points only with the bf16-dot flavour.
inline bool MetaMayBe16Bit(const W4a16Layout& l) {
  return !l.asymmetric && (!l.float_zero || l.flavor == Flavor::kBf16Dot);
}

// The layout the packer writes: the bf16-dot flavour takes integer zero
// points as float ones (above), so a dot layout is never `asymmetric`.
inline W4a16Layout WithDotZeroPointsFolded(W4a16Layout l) {
  if (l.flavor == Flavor::kBf16Dot && l.asymmetric) {
    l.asymmetric = false;
    l.float_zero = true;
    l.folded_zero = true;
  }
  return l;
}

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_LAYOUT_H_
