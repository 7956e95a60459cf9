// The choice of implementation for one layer from its canonical weights:
// the JIT family of its mode on the active ISA tier, else the reference.
// Shared by Layer and by composite layers (runtime/moe/) that build
// kernels for slices of their weights.
#ifndef W4JIT_RUNTIME_MAKE_KERNEL_H_
#define W4JIT_RUNTIME_MAKE_KERNEL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// `desc` has passed ValidateDesc and `w` matches it. Errors only for a
// failure that should not happen (JIT); a layer no JIT kernel takes runs
// on the reference (the reason is logged at info level).
absl::StatusOr<std::unique_ptr<LinearKernel>> MakeLinearKernel(
    const LayerDesc& desc, CanonicalWeights w, bool force_reference);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_MAKE_KERNEL_H_
