// Threading sits behind this small interface so that a host framework can
// run w4jit's work on its own pool instead of w4jit's.
#ifndef W4JIT_PARALLEL_HPP_
#define W4JIT_PARALLEL_HPP_

#include <cstdint>
#include <functional>
#include <memory>

namespace w4jit {

// Runs `num_chunks` independent pieces of work, possibly concurrently, and
// returns when all have finished. Chunks never depend on each other and
// write disjoint outputs, so any order or concurrency is correct.
class ParallelBackend {
 public:
  virtual ~ParallelBackend() = default;
  // How many chunks can usefully run at once (>= 1).
  virtual int concurrency() const = 0;
  virtual void Run(int num_chunks,
                   const std::function<void(int chunk)>& fn) = 0;
};

// Threads used by subsequent layer runs. 0 restores the default: the cores
// this process may run on (sched_getaffinity). Values < 0 are ignored.
void SetNumThreads(int num_threads);
int GetNumThreads();

// Replaces w4jit's own pool; nullptr restores it. The backend's
// concurrency() then decides how many chunks a run is split into.
void SetParallelBackend(std::shared_ptr<ParallelBackend> backend);

}  // namespace w4jit

#endif  // W4JIT_PARALLEL_HPP_
