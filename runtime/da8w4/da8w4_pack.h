// Packed weights of the DA8W4 JIT kernels, in the layout the generators
// read (jit/da8w4_layout.h, which describes it).
#ifndef W4JIT_RUNTIME_DA8W4_DA8W4_PACK_H_
#define W4JIT_RUNTIME_DA8W4_DA8W4_PACK_H_

#include <cstddef>
#include <cstdint>

#include "base/memory.h"
#include "jit/da8w4_layout.h"
#include "runtime/canonical_weights.h"

namespace w4jit::internal {

// The layout of `w` for vectors of `lanes` int32; its scales stored as
// bf16 or f16 where every one is exact in it (f16 only where f16_ok: the
// CPU has F16C) and scales_16bit allows it, else f32.
Da8w4Layout MakeDa8w4Layout(const CanonicalWeights& w, int lanes,
                            bool scales_16bit = false, bool f16_ok = false);

struct Da8w4Packed {
  Da8w4Layout layout;
  // Filled by the threads that read them at M = 1 (first touch).
  FirstTouchVector<uint8_t> weights;  // blocks * block_weight_bytes
  // [blocks][G][NB] of layout.scale_dtype.
  FirstTouchVector<uint8_t> scales;
  FirstTouchVector<int32_t> zeros;  // [blocks][G][NB]; u4 only
  AlignedVector<float> bias;        // [blocks * NB]; only with bias

  size_t bytes() const {
    return weights.size() + scales.size() + 4 * (zeros.size() + bias.size());
  }
};

// Repacks `w` for `layout` (whose n, k, group size must be w's) on the
// library's threads, cut as the kernels cut a call at M = 1 (SmallMParts
// with `m1_align`, the M = 1 tile's blocks per step): chunk c packs the
// blocks it will read, so on a NUMA machine each thread's share of the
// weights lies on its own node (first touch). The bytes do not depend on
// the split.
Da8w4Packed PackDa8w4(const CanonicalWeights& w, const Da8w4Layout& layout,
                      int64_t m1_align);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_DA8W4_DA8W4_PACK_H_
