// w4jit's own thread pool: workers that spin on an atomic generation for a
// bounded time after each run (so back-to-back layer calls find them awake
// instead of paying a futex wake-up per call, which on a VM costs as much
// as a whole M = 1 layer), then sleep on a futex (an idle process goes
// quiet on its own).
#ifndef W4JIT_RUNTIME_THREADS_SPIN_POOL_H_
#define W4JIT_RUNTIME_THREADS_SPIN_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "w4jit/parallel.hpp"

namespace w4jit::internal {

class SpinPool final : public ParallelBackend {
 public:
  // `threads` >= 1 counts the caller; threads - 1 workers are started.
  // `spin_us` is read at every wait, so changes apply at once. Workers run
  // on `process_cpus` (runtime/threads/process_cpus.h), never on the mask they
  // inherit from the creating thread; see WorkerCpus for which CPUs.
  SpinPool(int threads, const std::atomic<int>* spin_us, bool pin,
           const std::vector<int>& process_cpus);
  ~SpinPool() override;  // joins the workers, spinning or asleep

  int concurrency() const override { return threads_; }
  bool pinned() const { return pin_; }

  // Chunk c belongs to thread c % threads (the caller is thread 0, worker
  // i thread i), as on the OpenMP backend: with the work split's one
  // chunk per thread, a thread reads the same columns at every call, the
  // ones it packed (first touch). A thread runs its own chunks first, then
  // takes those its owners have not started (the caller's once the caller
  // has begun): a worker that is late to wake costs nothing but its
  // share, which another thread takes. Callers
  // from several threads are serialised; a call from inside a chunk
  // (nested) runs inline.
  void Run(int num_chunks, const std::function<void(int)>& fn) override;

  // The affinity the pool gives worker i (1 <= i < threads), from the CPUs
  // the process may use and the creating thread's mask `caller_cpus`:
  //  - pinned: one CPU each, the caller's CPUs first, then the others, in
  //    increasing order, wrapping round when there are more workers;
  //  - not pinned: all the process's CPUs but the caller's, when the
  //    caller is pinned to a part of them and the rest has a CPU per
  //    worker (a runtime pinned the caller: keep off its CPU), else all.
  // So no two of the pool's threads share a CPU unless there are more
  // threads than CPUs (unpinned workers are spread by the scheduler).
  static std::vector<int> WorkerCpus(int worker, int threads, bool pin,
                                     const std::vector<int>& process_cpus,
                                     const std::vector<int>& caller_cpus);

 private:
  // 128 bytes: a line and its adjacent-line prefetch partner.
  struct alignas(128) Cursor {
    std::atomic<int> taken{0};  // chunks of its owner handed out so far
  };

  void Work(int self);
  // Takes chunks of the current job until none are left: the own ones of
  // thread `self`, then the others'.
  void Drain(int self);

  const int threads_;
  const bool pin_;
  const std::atomic<int>* const spin_us_;
  std::vector<std::thread> workers_;
  std::mutex run_mu_;

  // The shared state sits on separate lines by who writes it, so that the
  // line the workers spin on changes once per job and taking a chunk does
  // not steal it from them (nor from the thread that owns the next chunk).
  // The job: written by the caller before it opens the job, read by a
  // worker only while it is counted in active_ and saw the job open.
  alignas(128) std::atomic<const std::function<void(int)>*> fn_{nullptr};
  std::atomic<int> num_chunks_{0};
  std::atomic<bool> stop_{false};
  // Job number * 2, plus 1 once the job is closed (all chunks taken and
  // the caller about to return): a worker joins only an open job.
  alignas(128) std::atomic<uint32_t> generation_{1};
  std::atomic<int> job_sleepers_{0};  // workers asleep on generation_
  // Workers inside the open job; the caller returns once it drops to 0.
  alignas(128) std::atomic<uint32_t> active_{0};
  std::atomic<int> done_sleepers_{0};  // callers asleep on active_
  std::unique_ptr<Cursor[]> cursors_;  // one per thread
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_THREADS_SPIN_POOL_H_
