// Process-wide cache of JIT kernels keyed by their generator's config
// (jit/kernel_config.h, dispatch/config_key.h), bounded: at most
// capacity kernels (w4jit/kernel_cache.hpp; default 1024, or
// W4JIT_KERNEL_CACHE_CAPACITY), the least recently requested evicted first.
// Kernels are shared: the cache hands out shared_ptrs and every layer holds
// the kernels it runs, so eviction drops only the cache's reference and a
// live layer's kernels stay valid; a kernel's code is freed when the last
// holder lets go.
//
// Two threads asking for the same key never generate it twice: the first
// creates an entry and generates under the entry's own once-flag while
// others wait on it; a hit is one mutex-protected hash lookup and a move to
// the front of the recency list. The runtime asks the cache
// (runtime/w4a16/w4a16_kernel_lookup.h, runtime/da8w4/da8w4_kernel_lookup.h)
// and the cache runs the generator; the generators in jit/ never call it
// (tests/layering_check.cmake).
#ifndef W4JIT_RUNTIME_KERNEL_CACHE_H_
#define W4JIT_RUNTIME_KERNEL_CACHE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/generator.h"
#include "jit/kernel_config.h"

namespace w4jit::internal {

using GeneratorFactory = std::function<std::unique_ptr<Generator>()>;

// Returns the created kernel for `config`, generating it with `factory` on the
// first request (or the first after the key was evicted). The kernel lives
// as long as someone holds the pointer. A failed generation is cached too
// (the same error is returned again), except RESOURCE_EXHAUSTED (a code
// buffer that could not be mapped), which is retried on the next request.
absl::StatusOr<std::shared_ptr<const Generator>> GetOrCreateKernel(
    const KernelConfig& config, const GeneratorFactory& factory);

struct KernelCacheStats {
  int64_t entries = 0;
  int64_t capacity = 0;
  int64_t generations = 0;  // times a factory ran
  int64_t hits = 0;
  int64_t evictions = 0;  // entries dropped to stay within the capacity
  double total_generation_ms = 0.0;
};
KernelCacheStats GetKernelCacheStats();

// Every kernel the cache holds (for tools and the W^X test); the code stays
// mapped while the cache or a layer holds the kernel.
struct KernelInfo {
  std::string name;
  const void* code = nullptr;
  size_t size = 0;
};
std::vector<KernelInfo> ListKernels();

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_KERNEL_CACHE_H_
