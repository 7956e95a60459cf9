// Internal side of the threading interface: what kernels call.
#ifndef W4JIT_RUNTIME_PARALLEL_H_
#define W4JIT_RUNTIME_PARALLEL_H_

#include <cstdint>
#include <functional>

namespace w4jit::internal {

// Chunks that can run at once with the current settings (>= 1).
int Concurrency();

// Runs fn(chunk) for chunk in [0, num_chunks) on the active backend (the
// host's, the OpenMP team, or w4jit's pool sized by SetNumThreads) and
// waits for all. With num_chunks == 1, or inside an active OpenMP parallel
// region, it runs inline on the caller. How work is cut into chunks:
// runtime/work_split.h.
void ParallelRun(int num_chunks, const std::function<void(int chunk)>& fn);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_PARALLEL_H_
