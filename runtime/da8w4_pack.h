// Packed weights of the DA8W4 JIT kernels, in the layout the generators
// read (jit/da8w4_layout.h, which describes it).
#ifndef W4JIT_RUNTIME_DA8W4_PACK_H_
#define W4JIT_RUNTIME_DA8W4_PACK_H_

#include <cstddef>
#include <cstdint>

#include "base/memory.h"
#include "jit/da8w4_layout.h"
#include "runtime/canonical_weights.h"

namespace w4jit::internal {

Da8w4Layout MakeDa8w4Layout(const CanonicalWeights& w, int lanes);

struct Da8w4Packed {
  Da8w4Layout layout;
  AlignedVector<uint8_t> weights;  // blocks * block_weight_bytes
  AlignedVector<float> scales;     // [blocks][G][NB]
  AlignedVector<int32_t> zeros;    // [blocks][G][NB]; u4 only
  AlignedVector<float> bias;       // [blocks * NB]; only with bias

  size_t bytes() const {
    return weights.size() + 4 * (scales.size() + zeros.size() + bias.size());
  }
};

// Repacks `w` for `layout` (whose n, k, group size must be w's); runs on
// the library's threads.
Da8w4Packed PackDa8w4(const CanonicalWeights& w, const Da8w4Layout& layout);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_DA8W4_PACK_H_
