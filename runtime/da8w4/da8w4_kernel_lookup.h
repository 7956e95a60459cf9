// The DA8W4 JIT kernels (activation quantizer, GEMM microkernel, panel
// decoder) as the runtime gets them: the config is checked first (a config
// that cannot be generated is an error, never a cache entry), then the
// process-wide cache (runtime/kernel_cache.h) returns the kernel, running
// the generator on the first request. The generators in jit/ know nothing
// of the cache.
#ifndef W4JIT_RUNTIME_DA8W4_DA8W4_KERNEL_LOOKUP_H_
#define W4JIT_RUNTIME_DA8W4_DA8W4_KERNEL_LOOKUP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "jit/act_quantizer_generator.h"
#include "jit/da8w4_decode_generator.h"
#include "jit/da8w4_gemm_generator.h"
#include "jit/generator.h"

namespace w4jit::internal {

// The caller holds a kernel for as long as it may run it (the cache may
// evict its own reference).
absl::StatusOr<std::shared_ptr<const Generator>> GetActQuantizer(
    const ActQuantConfig& config);
absl::StatusOr<std::shared_ptr<const Generator>> GetDa8w4GemmKernel(
    const Da8w4GemmConfig& config);
absl::StatusOr<std::shared_ptr<const Generator>> GetDa8w4DecodeKernel(
    IsaTier isa, bool minus8 = false);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_DA8W4_DA8W4_KERNEL_LOOKUP_H_
