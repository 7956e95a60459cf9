#include "runtime/parallel.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "w4jit/parallel.hpp"

namespace w4jit {
namespace internal {
namespace {

int AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

// A fixed set of workers that each take chunks from a shared counter; the
// caller works too. One Run at a time (callers are serialised by run_mu_),
// which is what a layer needs: its chunks already use all cores.
class ThreadPool final : public ParallelBackend {
 public:
  explicit ThreadPool(int threads) : threads_(std::max(1, threads)) {
    for (int i = 1; i < threads_; ++i)
      workers_.emplace_back([this] { Work(); });
  }
  ~ThreadPool() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int concurrency() const override { return threads_; }

  void Run(int num_chunks, const std::function<void(int)>& fn) override {
    if (num_chunks <= 0) return;
    if (num_chunks == 1 || threads_ == 1) {
      for (int i = 0; i < num_chunks; ++i) fn(i);
      return;
    }
    std::lock_guard<std::mutex> run_lock(run_mu_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      num_chunks_ = num_chunks;
      next_.store(0);
      pending_ = num_chunks;
      ++generation_;
    }
    cv_.notify_all();
    Drain();
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  // Takes chunks until none are left; counts finished ones.
  void Drain() {
    int finished = 0;
    for (;;) {
      int c = next_.fetch_add(1);
      if (c >= num_chunks_) break;
      (*fn_)(c);
      ++finished;
    }
    if (finished > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ -= finished;
      if (pending_ == 0) done_cv_.notify_all();
    }
  }

  void Work() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (fn_ == nullptr) continue;
      }
      Drain();
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex run_mu_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  const std::function<void(int)>* fn_ = nullptr;
  int num_chunks_ = 0;
  std::atomic<int> next_{0};
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

struct State {
  std::mutex mu;
  int requested = 0;  // 0: default
  std::shared_ptr<ParallelBackend> host;
  std::shared_ptr<ThreadPool> pool;
};

State& GetState() {
  static State* state = new State;  // never destroyed: used at exit
  return *state;
}

std::shared_ptr<ParallelBackend> ActiveBackend() {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.host) return s.host;
  int want = s.requested > 0 ? s.requested : AvailableCores();
  if (!s.pool || s.pool->concurrency() != want) {
    s.pool = std::make_shared<ThreadPool>(want);
  }
  return s.pool;
}

}  // namespace

int Concurrency() { return std::max(1, ActiveBackend()->concurrency()); }

void ParallelRun(int num_chunks, const std::function<void(int)>& fn) {
  if (num_chunks <= 0) return;
  if (num_chunks == 1) {
    fn(0);
    return;
  }
  ActiveBackend()->Run(num_chunks, fn);
}

Range SplitRange(int64_t total, int parts, int part, int64_t align) {
  if (align < 1) align = 1;
  const int64_t units = (total + align - 1) / align;
  const int64_t base = units / parts;
  const int64_t extra = units % parts;
  const int64_t begin_u = part * base + std::min<int64_t>(part, extra);
  const int64_t end_u = begin_u + base + (part < extra ? 1 : 0);
  return {std::min(total, begin_u * align), std::min(total, end_u * align)};
}

}  // namespace internal

void SetNumThreads(int num_threads) {
  if (num_threads < 0) return;
  auto& s = internal::GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  s.requested = num_threads;
}

int GetNumThreads() { return internal::Concurrency(); }

void SetParallelBackend(std::shared_ptr<ParallelBackend> backend) {
  auto& s = internal::GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  s.host = std::move(backend);
}

}  // namespace w4jit
