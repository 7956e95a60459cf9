// PLACEHOLDER until the W4A16 JIT family lands; replaced by jit/w4a16_*.cc.
#include "runtime/jit_kernels.h"

namespace w4jit::internal {
absl::StatusOr<std::unique_ptr<LinearKernel>> MakeW4a16JitKernel(
    const LayerDesc&, const CanonicalWeights&, const CpuProfile&, IsaTier,
    std::string* why_not) {
  *why_not = "W4A16 JIT kernels are not built yet";
  return std::unique_ptr<LinearKernel>();
}
}  // namespace w4jit::internal
