// The byte layout of the packed weights the W4A16 kernels read
// (runtime/w4a16_pack.h fills it). Defined here, beside the generators,
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
//  bf16-dot flavour: for each k quad (4q .. 4q + 3) and each vector of 16
//    columns, 32 bytes; bytes 2c and 2c + 1 hold column c's k = 4q and
//    4q + 1 in their low nibbles and 4q + 2, 4q + 3 in their high ones.
//    `vpmovzxbw` gives 32 words whose low nibbles are the (k even, k odd)
//    pairs of k-pair 2q, one dword per column (what vdpbf16ps multiplies),
//    and whose high nibbles are k-pair 2q + 1.
//
// Per block and group the kernel reads NB f32 scales and, for u4, the zero
// points right after them ("meta", MetaVectorsPerGroup); the bias is padded
// to whole blocks.
//
// Float zero points (ZeroPointDomain::kFloat, w = (u - 8) * s + zf): the
// nibbles are packed as for s4 (the decode gives u - 8) and the meta holds
// zf after the scales (both flavours) and 16 * zf after that (f32 FMA, for
// the dequantized panel's odd k). The int4 kernel adds zf * sum_{k in g} x
// per group, reading the sums from the packed rows (runtime/w4a16_pack.h);
// the dequantizer adds zf to each dequantized weight.
#ifndef W4JIT_JIT_W4A16_LAYOUT_H_
#define W4JIT_JIT_W4A16_LAYOUT_H_

#include <cstdint>

#include "dispatch/kernel_key.h"

namespace w4jit::internal {

// Per group and column block the kernels read "meta": NB f32 scales, then
// for u4 the zero points as the flavour needs them (f32 FMA: z and 16 * z;
// bf16 dot: (15 - z) * 0x10001, a vpermw index offset in both words of a
// column's dword), or the float zero points (f32 FMA: zf and 16 * zf; bf16
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

  int64_t groups() const { return k / group_size; }
  int64_t block_n() const { return int64_t{lanes} * nv; }
  int64_t blocks() const { return (n + block_n() - 1) / block_n(); }
  int64_t block_weight_bytes() const { return k / 2 * block_n(); }
  // 32-bit elements of meta per group.
  int64_t group_meta_elems() const {
    return block_n() * MetaVectorsPerGroup(flavor == Flavor::kBf16Dot,
                                           asymmetric || float_zero);
  }
  int64_t block_meta_elems() const { return groups() * group_meta_elems(); }
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_LAYOUT_H_
