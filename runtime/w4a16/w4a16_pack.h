// Packed weights and activations of the W4A16 JIT kernels. The weights
// are in the layout the generators read (jit/w4a16_layout.h, which
// describes it).
#ifndef W4JIT_RUNTIME_W4A16_W4A16_PACK_H_
#define W4JIT_RUNTIME_W4A16_W4A16_PACK_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/memory.h"
#include "jit/w4a16_layout.h"
#include "runtime/canonical_weights.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct W4a16Packed {
  W4a16Layout layout;
  // Filled by the threads that read them at M = 1 (first touch).
  FirstTouchVector<uint8_t> weights;  // blocks * block_weight_bytes
  // Per block, per group: NB scales then (u4) the zero points, of
  // layout.meta_dtype (f32, bf16 or f16).
  FirstTouchVector<uint8_t> meta;
  AlignedVector<float> bias;  // blocks * NB, zero padded; empty if none

  size_t bytes() const {
    return weights.size() + meta.size() + bias.size() * 4;
  }
};

// The 16-bit meta dtype the layout may store `w`'s scales (and float zero
// points) in exactly: bf16 if every value is exact in it, else f16
// (f16_ok: the CPU has F16C) if every value is, else f32. Always f32 where
// MetaMayBe16Bit (jit/w4a16_layout.h) says no. `requested` as for
// PackW4a16Weights.
DType CompactW4a16MetaDtype(const CanonicalWeights& w,
                            const W4a16Layout& requested, bool f16_ok);

// Requires K even and group_size even (and both multiples of 4 for the
// bf16 flavour), and layout.meta_dtype f32 or what CompactW4a16MetaDtype
// chose; the caller checks. Runs on the library's threads, cut as
// the kernels cut a call at M = 1 (SmallMParts over the blocks): chunk c
// packs the blocks it will read, so on a NUMA machine each thread's share
// of the weights lies on its own node (first touch). The bytes do not
// depend on the split.
W4a16Packed PackW4a16Weights(const CanonicalWeights& w,
                             const W4a16Layout& layout);

// Activation rows as the kernels read them: rows in groups of `mr` (the
// last group holds the M % mr rest), group g starting at row g * mr; within
// a group of `rows` rows, element (k, r) at [k * rows + r]. So a group of
// rows is one pointer and broadcasts of x[r][k] are fixed offsets.
// f32 flavour, panels (PackRowsF32): f32 elements (bf16 x widened exactly),
// odd k divided by 16 (exact but for f32 x below 2^-122) to match the
// dequantizer's 16 * (u - z); `out` holds m * k floats. With act-order
// (CanonicalWeights::k_perm, non-null k_perm) element k of a packed row is x
// column k_perm[k]: the gather rides on this pass, which every call makes
// anyway. Large batches are packed on the library's threads (whole row groups
// per thread, so the output does not depend on the thread count).
void PackRowsF32(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                 int64_t k, int mr, float* out,
                 const int32_t* k_perm = nullptr);
// f32 flavour, int4 kernel: even k hold x[2p] - x[2p + 1] / 16 and odd k
// x[2p + 1] / 16 (jit/w4a16_layout.h, F32Int4RowSlots), and after the
// elements of each K group of `group` columns come the group's slots, each
// `rows` f32 (slot r for row r, in f32 and in k order from the unscaled x):
// -8 * the sum over the group's even k, then the sum over all its k, as
// `slots` asks. `out` holds m * PackedF32Int4RowElements(k, group, slots).
// k_perm as for PackRowsF32.
void PackRowsF32Int4(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                     int64_t k, int mr, float* out, const int32_t* k_perm,
                     int64_t group, F32Int4RowSlots slots);
int64_t PackedF32Int4RowElements(int64_t k, int64_t group,
                                 F32Int4RowSlots slots);
// bf16 flavour: one 32-bit element per k pair (bf16 x[2p] low, x[2p+1]
// high), f32 x rounded to bf16 nearest-even. `out` holds m *
// PackedBf16PairsRowElements(k, sum_group). k_perm as for PackRowsF32.
// sum_group > 0 (float zero points, jit/w4a16_layout.h): after the elements of
// each K group of sum_group columns come `rows` slots, slot r holding the
// group's sum of the bf16 values of row r the kernel multiplies (f32 bits, in k
// order). 0: no sums.
void PackRowsBf16Pairs(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                       int64_t k, int mr, uint32_t* out,
                       const int32_t* k_perm = nullptr, int64_t sum_group = 0);
// 32-bit elements of one PackRowsBf16Pairs row: K / 2, plus K / sum_group
// sums when sum_group > 0.
int64_t PackedBf16PairsRowElements(int64_t k, int64_t sum_group);

// Runs pack(row0, row1) over rows [0, m) of K columns in ranges of whole
// row groups of mr, on the library's threads once there is enough to pack
// to pay for waking them (a strided scalar pass: ~2% of a 256-row prefill
// on one thread; measured 1.1-1.4x faster on 2 Zen 3 threads at M = 256,
// being partly bound by its writes).
void ForRowGroups(int64_t m, int64_t k, int mr,
                  const std::function<void(int64_t, int64_t)>& pack);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_W4A16_PACK_H_
