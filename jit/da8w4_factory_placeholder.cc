// PLACEHOLDER until the DA8W4 JIT family lands; replaced by jit/da8w4_*.cc.
#include "runtime/jit_kernels.h"

namespace w4jit::internal {
absl::StatusOr<std::unique_ptr<LinearKernel>> MakeDa8w4JitKernel(
    const LayerDesc&, const CanonicalWeights&, const CpuProfile&, IsaTier,
    std::string* why_not) {
  *why_not = "DA8W4 JIT kernels are not built yet";
  return std::unique_ptr<LinearKernel>();
}
}  // namespace w4jit::internal
