#include "runtime/threads/spin_pool.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "runtime/threads/process_cpus.h"

namespace w4jit::internal {
namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex needs a plain 32-bit word");

// Set on a thread while it runs a chunk of this pool's job (caller or
// worker): a Run from inside a chunk then runs inline instead of waiting
// for the pool it is part of.
thread_local bool t_in_job = false;

void FutexWait(std::atomic<uint32_t>* word, uint32_t value) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE,
          value, nullptr, nullptr, 0);
}

void FutexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE,
          INT_MAX, nullptr, nullptr, 0);
}

inline void CpuRelax() { __builtin_ia32_pause(); }

// Best effort: a failure leaves the worker on the mask it inherited.
void SetAffinity(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  (void)sched_setaffinity(0, sizeof set, &set);
}

// Waits until done(word) holds: spins with pause for up to spin_us, then
// sleeps on the futex (counted in *sleepers so that the writer knows to
// wake it). Returns the value that satisfied done.
template <typename Done>
uint32_t SpinThenSleep(std::atomic<uint32_t>* word, std::atomic<int>* sleepers,
                       int spin_us, Done done) {
  using Clock = std::chrono::steady_clock;
  uint32_t w = word->load(std::memory_order_acquire);
  if (done(w)) return w;
  if (spin_us > 0) {
    const Clock::time_point end =
        Clock::now() + std::chrono::microseconds(spin_us);
    for (int i = 1;; ++i) {
      CpuRelax();
      w = word->load(std::memory_order_acquire);
      if (done(w)) return w;
      if (i % 64 == 0 && Clock::now() >= end) break;
    }
  }
  sleepers->fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    w = word->load(std::memory_order_seq_cst);
    if (done(w)) break;
    FutexWait(word, w);
  }
  sleepers->fetch_sub(1, std::memory_order_relaxed);
  return w;
}

}  // namespace

std::vector<int> SpinPool::WorkerCpus(int worker, int threads, bool pin,
                                      const std::vector<int>& process_cpus,
                                      const std::vector<int>& caller_cpus) {
  std::vector<int> mine, others;  // the caller's and the rest, increasing
  for (int c : process_cpus) {
    (std::binary_search(caller_cpus.begin(), caller_cpus.end(), c) ? mine
                                                                   : others)
        .push_back(c);
  }
  if (pin) {
    std::vector<int> order = mine;
    order.insert(order.end(), others.begin(), others.end());
    if (order.empty()) return {};
    return {order[static_cast<size_t>(worker) % order.size()]};
  }
  if (!mine.empty() && static_cast<int>(others.size()) >= threads - 1) {
    return others;
  }
  return process_cpus;
}

SpinPool::SpinPool(int threads, const std::atomic<int>* spin_us, bool pin,
                   const std::vector<int>& process_cpus)
    : threads_(threads < 1 ? 1 : threads),
      pin_(pin),
      spin_us_(spin_us),
      cursors_(new Cursor[static_cast<size_t>(threads_)]) {
  std::vector<int> caller = ThreadCpus();
  for (int i = 1; i < threads_; ++i) {
    std::vector<int> cpus = WorkerCpus(i, threads_, pin, process_cpus, caller);
    workers_.emplace_back([this, i, cpus = std::move(cpus)] {
      SetAffinity(cpus);
      Work(i);
    });
  }
}

SpinPool::~SpinPool() {
  stop_.store(true, std::memory_order_seq_cst);
  // A new job number wakes every worker, spinning or asleep; they see stop_.
  generation_.fetch_add(2, std::memory_order_seq_cst);
  FutexWakeAll(&generation_);
  for (std::thread& t : workers_) t.join();
}

void SpinPool::Run(int num_chunks, const std::function<void(int)>& fn) {
  if (num_chunks <= 0) return;
  if (num_chunks == 1 || threads_ == 1 || t_in_job) {
    for (int i = 0; i < num_chunks; ++i) fn(i);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  // No worker reads the job now: the previous Run waited for active_ == 0
  // after closing its job, and a late worker re-checks the generation.
  fn_.store(&fn, std::memory_order_relaxed);
  num_chunks_.store(num_chunks, std::memory_order_relaxed);
  for (int t = 0; t < threads_; ++t) {
    cursors_[t].taken.store(0, std::memory_order_relaxed);
  }
  const uint32_t open = (generation_.load(std::memory_order_relaxed) | 1u) + 1u;
  generation_.store(open, std::memory_order_seq_cst);
  if (job_sleepers_.load(std::memory_order_seq_cst) > 0) {
    FutexWakeAll(&generation_);
  }
  t_in_job = true;
  Drain(0);
  t_in_job = false;
  // Every chunk is taken; those a worker took finish before it leaves.
  generation_.store(open | 1u, std::memory_order_seq_cst);
  SpinThenSleep(&active_, &done_sleepers_,
                spin_us_->load(std::memory_order_relaxed),
                [](uint32_t a) { return a == 0; });
}

void SpinPool::Drain(int self) {
  const std::function<void(int)>& fn = *fn_.load(std::memory_order_relaxed);
  const int n = num_chunks_.load(std::memory_order_relaxed);
  // Thread t's chunks are t, t + threads, ...; its cursor counts how many
  // of them were handed out (by it or by a thread taking them over). The
  // caller's first chunk is only ever its own: it is there for certain,
  // while a worker that took it would leave the caller idle and put the
  // caller's share on another thread than the one that packed it.
  for (int i = 0; i < threads_; ++i) {
    const int owner = (self + i) % threads_;
    if (owner >= n) continue;  // owns no chunk of this job
    std::atomic<int>& taken = cursors_[owner].taken;
    for (;;) {
      if (i > 0) {
        const int seen = taken.load(std::memory_order_relaxed);
        // All taken (no write then to another thread's line), or the
        // caller has not started on its own yet.
        if (owner + int64_t{seen} * threads_ >= n ||
            (owner == 0 && seen == 0)) {
          break;
        }
      }
      const int64_t c =
          owner +
          int64_t{taken.fetch_add(1, std::memory_order_relaxed)} * threads_;
      if (c >= n) break;
      fn(static_cast<int>(c));
    }
  }
}

void SpinPool::Work(int self) {
  // Job 0 is the closed one the pool starts with. Not the current value: a
  // worker that starts after the first Run opened job 1 must still join it.
  uint32_t seen_job = 0;
  for (;;) {
    const uint32_t w = SpinThenSleep(
        &generation_, &job_sleepers_, spin_us_->load(std::memory_order_relaxed),
        [&](uint32_t g) {
          return (g >> 1) != seen_job || stop_.load(std::memory_order_relaxed);
        });
    if (stop_.load(std::memory_order_acquire)) return;
    seen_job = w >> 1;
    if (w & 1u) continue;  // closed before this worker got to it
    active_.fetch_add(1, std::memory_order_seq_cst);
    // Counted before the caller closed the job, or it will not touch it:
    // the caller waits for active_ == 0 only after closing.
    if (generation_.load(std::memory_order_seq_cst) == w) {
      t_in_job = true;
      Drain(self);
      t_in_job = false;
    }
    if (active_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        done_sleepers_.load(std::memory_order_seq_cst) > 0) {
      FutexWakeAll(&active_);
    }
  }
}

}  // namespace w4jit::internal
