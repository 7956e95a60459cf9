// Internal side of the threading interface: what kernels call.
#ifndef W4JIT_RUNTIME_PARALLEL_H_
#define W4JIT_RUNTIME_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace w4jit::internal {

// Chunks that can run at once with the current settings (>= 1).
int Concurrency();

// Runs fn(chunk) for chunk in [0, num_chunks) on the active backend (the
// host's, or w4jit's pool sized by SetNumThreads) and waits for all. With
// num_chunks == 1 it runs inline on the caller.
void ParallelRun(int num_chunks, const std::function<void(int chunk)>& fn);

// Splits [0, total) into `parts` contiguous ranges of sizes differing by at
// most `align` (all boundaries are multiples of `align`); returns range i.
struct Range {
  int64_t begin;
  int64_t end;
};
Range SplitRange(int64_t total, int parts, int part, int64_t align = 1);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_PARALLEL_H_
