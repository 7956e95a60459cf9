// Internal side of the threading interface: what kernels call.
#ifndef W4JIT_RUNTIME_THREADS_PARALLEL_H_
#define W4JIT_RUNTIME_THREADS_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace w4jit::internal {

// Chunks that can run at once with the current settings (>= 1).
int Concurrency();

// Runs fn(chunk) for chunk in [0, num_chunks) on the active backend (the
// host's, the OpenMP team, or w4jit's pool sized by SetNumThreads) and
// waits for all. With num_chunks == 1, or inside an active OpenMP parallel
// region, it runs inline on the caller. How work is cut into chunks:
// runtime/threads/work_split.h.
void ParallelRun(int num_chunks, const std::function<void(int chunk)>& fn);

// While an instance lives, ParallelRun on this thread runs its chunks
// inline and Concurrency() is 1: a composite layer (the MoE layer) that
// parallelises over its own work items runs each item's kernels inside
// its chunk, on the chunk's thread, without a nested region. Kernels
// compute the same outputs whatever their chunk count, so this changes
// no result.
class InlineScope {
 public:
  InlineScope();
  ~InlineScope();
  InlineScope(const InlineScope&) = delete;
  InlineScope& operator=(const InlineScope&) = delete;
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_THREADS_PARALLEL_H_
