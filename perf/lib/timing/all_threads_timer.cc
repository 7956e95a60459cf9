#include "perf/lib/timing/all_threads_timer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "runtime/threads/parallel.h"

namespace w4jit::perf {

double TimeOnAllThreads(int threads, const std::function<void(int)>& body) {
  using Clock = std::chrono::steady_clock;
  std::atomic<int> arrived{0};
  std::vector<Clock::time_point> start(threads), end(threads);
  internal::ParallelRun(threads, [&](int t) {
    arrived.fetch_add(1);
    const Clock::time_point deadline =
        Clock::now() + std::chrono::milliseconds(200);
    while (arrived.load() < threads && Clock::now() < deadline) {
      __builtin_ia32_pause();
    }
    start[t] = Clock::now();
    body(t);
    end[t] = Clock::now();
  });
  const auto first = *std::min_element(start.begin(), start.end());
  const auto last = *std::max_element(end.begin(), end.end());
  return std::chrono::duration<double>(last - first).count();
}

}  // namespace w4jit::perf
