// Packed weights and activations of the W4A16 JIT kernels.
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
// points right after them ("meta", see MetaVectorsPerGroup in
// jit/w4a16_decode.h); the bias is padded to whole blocks.
#ifndef W4JIT_RUNTIME_W4A16_PACK_H_
#define W4JIT_RUNTIME_W4A16_PACK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dispatch/kernel_key.h"
#include "jit/w4a16_decode.h"
#include "runtime/canonical_weights.h"
#include "runtime/memory.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct W4a16Layout {
  Flavor flavor = Flavor::kF32Fma;
  int lanes = 8;  // 32-bit lanes of a vector: 8 (ymm) or 16 (zmm)
  int nv = 4;     // vectors per column block
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 0;  // resolved (K for per-channel)
  bool asymmetric = false;

  int64_t groups() const { return k / group_size; }
  int64_t block_n() const { return int64_t{lanes} * nv; }
  int64_t blocks() const { return (n + block_n() - 1) / block_n(); }
  int64_t block_weight_bytes() const { return k / 2 * block_n(); }
  // 32-bit elements of meta per group.
  int64_t group_meta_elems() const {
    return block_n() *
           MetaVectorsPerGroup(flavor == Flavor::kBf16Dot, asymmetric);
  }
  int64_t block_meta_elems() const { return groups() * group_meta_elems(); }
};

struct W4a16Packed {
  W4a16Layout layout;
  AlignedVector<uint8_t> weights;  // blocks * block_weight_bytes
  // Per block, per group: NB f32 scales then (u4) the zero points.
  AlignedVector<uint32_t> meta;
  AlignedVector<float> bias;  // blocks * NB, zero padded; empty if none

  size_t bytes() const {
    return weights.size() + meta.size() * 4 + bias.size() * 4;
  }
};

// Requires K even and group_size even (and both multiples of 4 for the
// bf16 flavour); the caller checks.
W4a16Packed PackW4a16Weights(const CanonicalWeights& w,
                             const W4a16Layout& layout);

// Activation rows as the kernels read them: rows in groups of `mr` (the
// last group holds the M % mr rest), group g starting at row g * mr; within
// a group of `rows` rows, element (k, r) at [k * rows + r]. So a group of
// rows is one pointer and broadcasts of x[r][k] are fixed offsets.
// f32 flavour: f32 elements (bf16 x widened exactly), odd k divided by 16
// (exact but for f32 x below 2^-122) to match the decode's 16 * (u - z).
// `out` holds m * k. With act-order (CanonicalWeights::k_perm, non-null
// k_perm) element k of a packed row is x column k_perm[k]: the gather rides
// on this pass, which every call makes anyway.
void PackRowsF32(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                 int64_t k, int mr, float* out,
                 const int32_t* k_perm = nullptr);
// bf16 flavour: one 32-bit element per k pair (bf16 x[2p] low, x[2p+1]
// high), f32 x rounded to bf16 nearest-even. `out` holds m * k / 2.
// k_perm as for PackRowsF32.
void PackRowsBf16Pairs(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                       int64_t k, int mr, uint32_t* out,
                       const int32_t* k_perm = nullptr);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_PACK_H_
