// Entry points of the JIT kernel families. Each either builds a kernel for
// the layer (packing the weights for it) or says why it cannot, in which
// case the layer runs on the reference path and names the reason.
#ifndef W4JIT_RUNTIME_JIT_KERNELS_H_
#define W4JIT_RUNTIME_JIT_KERNELS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"
#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// Returns nullptr and sets *why_not when the family cannot take this layer
// on `isa` (e.g. a group size that is not a multiple of 4); returns an
// error only when something failed that should not (JIT failure).
absl::StatusOr<std::unique_ptr<LinearKernel>> MakeDa8w4JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier isa, std::string* why_not);

absl::StatusOr<std::unique_ptr<LinearKernel>> MakeW4a16JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier isa, std::string* why_not);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_JIT_KERNELS_H_
