// The byte layouts the DA8W4 kernels read: the packed weights (which
// runtime/da8w4/da8w4_pack.h fills) and the quantized activations (which the
// quantizer, jit/act_quantizer_generator.h, writes). They are defined here,
// beside the generators, because the emitted code is what fixes them; the
// packing code follows.
//
// Weights. Columns are cut into blocks of NB = 2L output channels, L being
// the int32 lanes of a vector (8 for AVX2, 16 for AVX-512); the last block
// is padded with u = 0, scale 0, zero point 0 and bias 0. K is padded to a
// multiple of 4 with u = 0 (the quantizer pads qa with zeros there too).
//
// Per block, per k-quad q (k = 4q .. 4q+3): one vector of 4L bytes; byte
// 4c + i holds u[n0 + c][4q + i] in its low nibble and u[n0 + L + c][4q + i]
// in its high nibble. One load, `and 0x0F` gives the unsigned operand of
// columns n0 .. n0+L-1 for vpmaddubsw / vpdpbusd, and `>> 4, and 0x0F` that
// of columns n0+L .. n0+2L-1. A block's quads are contiguous, so the kernel
// streams each block once, front to back. Large-M kernels read a decoded
// copy of a panel of blocks instead (decoded_block_bytes): the same bytes
// with the nibbles split apart.
//
// Scales and, for u4, zero points (int32) are stored per block, per group,
// as NB values in column order: what one group end reads is two contiguous
// vectors. The scales are f32, or bf16 / f16 where every one is exact in it
// (scale_dtype, runtime/scale_storage.h: at group 128 f32 scales are 1/16
// of the stream); the kernel widens them exactly. Bias is padded to whole
// blocks.
//
// Activations. A qa row holds K int8 values followed by zeros up to at
// least RoundUp(K, 4), and has room for one full vector store past K; the
// GEMM kernels bake the row strides below in. Beside it: the int32 sums of
// qa per group, and the f32 scale(s) sa of the row, one (per token) or one
// per group (per group).
#ifndef W4JIT_JIT_DA8W4_LAYOUT_H_
#define W4JIT_JIT_DA8W4_LAYOUT_H_

#include <cstdint>
#include <tuple>
#include <utility>

#include "base/numeric.h"
#include "dispatch/config_key.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct Da8w4Layout {
  int lanes = 8;  // L: int32 lanes of a vector
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 0;           // resolved (K for per-channel)
  DType scale_dtype = DType::kF32;  // f32, bf16 or f16 (above)

  // Every field: a layout is part of the DA8W4 GEMM's kernel-cache key
  // (dispatch/config_key.h).
  template <class Self>
  static auto Fields(Self& l) {
    return std::tie(l.lanes, l.n, l.k, l.group_size, l.scale_dtype);
  }
  bool operator==(const Da8w4Layout& o) const {
    return Fields(*this) == Fields(o);
  }
  template <class H>
  friend H AbslHashValue(H h, const Da8w4Layout& l) {
    return H::combine(std::move(h), Fields(l));
  }

  int block_cols() const { return 2 * lanes; }
  int quad_bytes() const { return 4 * lanes; }  // one vector
  int64_t groups() const { return k / group_size; }
  int64_t k_quads() const { return (k + 3) / 4; }
  // Quads per group; per-channel: all of (padded) K.
  int64_t group_quads() const {
    return groups() == 1 ? k_quads() : group_size / 4;
  }
  int64_t blocks() const { return (n + block_cols() - 1) / block_cols(); }
  int64_t block_weight_bytes() const { return k_quads() * quad_bytes(); }
  // The same block decoded (runtime/da8w4/da8w4_decode.h): per quad the vector
  // of low nibbles, then the vector of high nibbles, one byte each.
  int64_t decoded_block_bytes() const { return 2 * block_weight_bytes(); }
  // Bytes of zero points (int32) of one block.
  int64_t block_param_bytes() const { return groups() * block_cols() * 4; }
  // Bytes of one scale, of one group's and of one block's scales.
  int scale_size() const { return static_cast<int>(DTypeSize(scale_dtype)); }
  int64_t group_scale_bytes() const { return block_cols() * scale_size(); }
  int64_t block_scale_bytes() const { return groups() * group_scale_bytes(); }
  // Columns of the last block that are real (1 .. NB).
  int last_block_cols() const {
    return static_cast<int>(n - (blocks() - 1) * block_cols());
  }
};

// Bytes between quantized activation rows (qa) and between rows of their
// per-group sums (int32): multiples of 64.
static_assert(CheckConfigFieldsListed<Da8w4Layout>());

inline int64_t QaRowStride(int64_t k) { return (k + 63) / 64 * 64 + 64; }
inline int64_t SumsRowStride(int64_t groups) {
  return (groups * 4 + 63) / 64 * 64;
}
// Bytes between rows of the activation scales (f32): one per row (per
// token), or one per group laid out as the sums (per group).
inline int64_t SaRowStride(int64_t groups, bool per_group) {
  return per_group ? SumsRowStride(groups) : 4;
}

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_LAYOUT_H_
