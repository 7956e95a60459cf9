// w4jit's own thread pool: workers that spin on an atomic generation for a
// bounded time after each run (so back-to-back layer calls find them awake
// instead of paying a futex wake-up per call, which on a VM costs as much
// as a whole M = 1 layer), then sleep on a futex (an idle process goes
// quiet on its own).
#ifndef W4JIT_RUNTIME_SPIN_POOL_H_
#define W4JIT_RUNTIME_SPIN_POOL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "w4jit/parallel.hpp"

namespace w4jit::internal {

class SpinPool final : public ParallelBackend {
 public:
  // `threads` >= 1 counts the caller; threads - 1 workers are started.
  // `spin_us` is read at every wait, so changes apply at once. With `pin`
  // worker i runs on the (i+1)-th CPU of the process's affinity mask.
  SpinPool(int threads, const std::atomic<int>* spin_us, bool pin);
  ~SpinPool() override;  // joins the workers, spinning or asleep

  int concurrency() const override { return threads_; }
  bool pinned() const { return pin_; }

  // Chunks are taken from one counter, by the caller and the workers that
  // are awake: with one chunk per thread (the work split's) a worker that
  // is late to wake costs nothing but its share, which the caller takes.
  // Callers from several threads are serialised; a call from inside a
  // chunk (nested) runs inline.
  void Run(int num_chunks, const std::function<void(int)>& fn) override;

 private:
  void Work();
  // Takes chunks of the current job until none are left.
  void Drain();

  const int threads_;
  const bool pin_;
  const std::atomic<int>* const spin_us_;
  std::vector<std::thread> workers_;
  std::mutex run_mu_;

  // The job: written by the caller before it opens the job, read by a
  // worker only while it is counted in active_ and saw the job open.
  std::atomic<const std::function<void(int)>*> fn_{nullptr};
  std::atomic<int> num_chunks_{0};
  std::atomic<int> next_{0};
  // Job number * 2, plus 1 once the job is closed (all chunks taken and
  // the caller about to return): a worker joins only an open job.
  std::atomic<uint32_t> generation_{1};
  std::atomic<int> job_sleepers_{0};  // workers asleep on generation_
  // Workers inside the open job; the caller returns once it drops to 0.
  std::atomic<uint32_t> active_{0};
  std::atomic<int> done_sleepers_{0};  // callers asleep on active_
  std::atomic<bool> stop_{false};
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_SPIN_POOL_H_
