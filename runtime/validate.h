// Checks of everything a caller passes in, each error naming the bad value.
#ifndef W4JIT_RUNTIME_VALIDATE_H_
#define W4JIT_RUNTIME_VALIDATE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "w4jit/layer.hpp"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// Shape, group size, dtype and mode combination of a layer.
absl::Status ValidateDesc(const LayerDesc& desc);
// Pointers the format needs are present, and absent ones are not required.
absl::Status ValidateWeightsPointers(const LayerDesc& desc,
                                     const WeightsView& view);
// The layer's epilogue (activation, binary post-ops, silu_mul vs N).
absl::Status ValidateEpilogue(const LayerDesc& desc);
// zero_point_domain and zero_point_dtype (part of ValidateDesc).
absl::Status ValidateZeroPointDomain(const LayerDesc& desc);
// Arguments of Layer::Run (ldy against N_out = desc.out_n()).
absl::Status ValidateRunArgs(const LayerDesc& desc, int64_t m, const void* x,
                             int64_t ldx, const void* y, int64_t ldy);
// The binary post-op operands of one Run: present for each of the layer's
// num_binary ops (when m > 0), ld >= N_out, absent past num_binary.
absl::Status ValidateEpilogueInputs(const LayerDesc& desc, int64_t m,
                                    const EpilogueInputs& inputs);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_VALIDATE_H_
