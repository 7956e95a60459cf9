// The process-wide cache of JIT kernels.
#ifndef W4JIT_KERNEL_CACHE_HPP_
#define W4JIT_KERNEL_CACHE_HPP_

#include <cstdint>

#include "absl/status/status.h"

namespace w4jit {

// Layers of the same shape share their JIT kernels through a process-wide
// cache, which holds at most this many kernels (the least recently
// requested are evicted first). Eviction drops only the cache's reference:
// a layer keeps the kernels it runs, whatever the capacity, and a kernel's
// code is freed when neither the cache nor a layer holds it. Default 1024, or
// the environment variable W4JIT_KERNEL_CACHE_CAPACITY (a positive integer),
// read at the first use of the cache. Lowering it evicts at once.
// InvalidArgument for a capacity below 1.
absl::Status SetKernelCacheCapacity(int64_t kernels);
int64_t GetKernelCacheCapacity();

}  // namespace w4jit

#endif  // W4JIT_KERNEL_CACHE_HPP_
