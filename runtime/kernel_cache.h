// Process-wide cache of JIT kernels keyed by KernelKey. Two threads asking
// for the same key never generate it twice: the first creates an entry and
// generates under the entry's own once-flag while others wait on it; a hit
// is one mutex-protected hash lookup. Kernels live as long as the process.
// The runtime asks the cache (runtime/da8w4/da8w4_kernel_lookup.h,
// runtime/w4a16/w4a16_kernel.cc) and the cache runs the generator; the
// generators in jit/ never call it.
#ifndef W4JIT_RUNTIME_KERNEL_CACHE_H_
#define W4JIT_RUNTIME_KERNEL_CACHE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/kernel_key.h"
#include "jit/generator.h"

namespace w4jit::internal {

using GeneratorFactory = std::function<std::unique_ptr<Generator>()>;

// Returns the created kernel for `key`, generating it with `factory` on the
// first request. The pointer stays valid for the life of the process. A
// failed generation is cached too (the same error is returned again),
// except RESOURCE_EXHAUSTED (a code buffer that could not be mapped), which
// is retried on the next request.
absl::StatusOr<const Generator*> GetOrCreateKernel(
    const KernelKey& key, const GeneratorFactory& factory);

// Frees every cached kernel (statistics are kept). Only for a process that
// knows no Layer is alive and no kernel is being requested, such as
// `w4jit selftest`, which creates tens of thousands of distinct shapes:
// every cached kernel is one code mapping, and a process may hold only so
// many (vm.max_map_count).
void ClearKernelCache();

struct KernelCacheStats {
  int64_t entries = 0;
  int64_t generations = 0;  // times a factory ran
  int64_t hits = 0;
  double total_generation_ms = 0.0;
};
KernelCacheStats GetKernelCacheStats();

// Every kernel generated so far (for tools and the W^X test).
struct KernelInfo {
  std::string name;
  const void* code = nullptr;
  size_t size = 0;
};
std::vector<KernelInfo> ListKernels();

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_KERNEL_CACHE_H_
