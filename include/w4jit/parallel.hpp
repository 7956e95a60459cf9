// Threading sits behind this small interface so that a host framework can
// run w4jit's work on its own pool instead of w4jit's.
#ifndef W4JIT_PARALLEL_HPP_
#define W4JIT_PARALLEL_HPP_

#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"

namespace w4jit {

enum class ThreadingBackend { kPool, kOpenMP };

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

// Threads used by subsequent layer runs. 0 restores the default: the CPUs
// this process may run on, read once at first use (README, "Threads": the
// process's set, not the calling thread's mask, which a runtime such as
// libgomp under OMP_PROC_BIND may have pinned to one CPU). Values < 0 are
// ignored.
void SetNumThreads(int num_threads);
int GetNumThreads();

// Replaces w4jit's own threading; nullptr restores it. The backend's
// concurrency() then decides how many chunks a run is split into. A host
// backend overrides the ThreadingBackend choice below.
void SetParallelBackend(std::shared_ptr<ParallelBackend> backend);

// w4jit's own threading when no host backend is set (README, "Threads"):
//   kPool    w4jit's pool (default): workers spin for a bounded time after
//            each run, so back-to-back layer calls find them awake, then
//            sleep; the calling thread works too.
//   kOpenMP  the process's OpenMP runtime (libgomp): runs the chunks on the
//            host's OpenMP team, so that a host that already uses OpenMP
//            (PyTorch) does not get a second set of threads fighting for
//            its cores. Threads: SetNumThreads, else omp_get_max_threads().
// Environment: W4JIT_THREADING=pool|omp, read once at first use.
// Fails (Unimplemented, nothing changed) for kOpenMP when w4jit was built
// without OpenMP, InvalidArgument for a value outside the enum.
absl::Status SetThreadingBackend(ThreadingBackend backend);
ThreadingBackend GetThreadingBackend();

// How long (microseconds) a pool worker spins waiting for the next run
// before it sleeps; 0 sleeps at once. Default 1000 (W4JIT_SPIN_US). Values
// < 0 are ignored. An idle process is quiet again this long after its
// last run.
void SetSpinMicroseconds(int us);
int GetSpinMicroseconds();

// The pool's workers always run on the CPUs the process may use (above),
// never on a narrower mask inherited from the thread that created the
// pool; unpinned, they keep off the caller's CPU when a runtime pinned the
// caller to part of the set. Pinning puts each worker on one CPU of that
// set: the caller's CPUs first, then the others, in increasing order
// (worker i on the (i+1)-th; with an unpinned caller, compact order), so
// no two of the pool's threads share a CPU unless there are more threads
// than CPUs; the calling thread is never pinned. Off by default
// (W4JIT_PIN=0|1). The OpenMP backend's placement is OpenMP's
// (OMP_PROC_BIND, OMP_PLACES).
void SetThreadPinning(bool on);
bool GetThreadPinning();

}  // namespace w4jit

#endif  // W4JIT_PARALLEL_HPP_
