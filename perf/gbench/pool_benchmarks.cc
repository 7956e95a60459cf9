// Where a parallel run's time goes beyond its chunks' work, pool against
// OpenMP: the round trip of empty chunks, and runs whose chunks stream a
// DRAM-sized share each (an M = 1..16 decode call's shape of work). Per
// run: min, p50 and p90 of its wall time, how late the last other thread
// started its chunk (wake-up), and how often the caller ran a chunk that
// belonged to another thread (a late worker's share taken over).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "base/memory.h"
#include "benchmark/benchmark.h"
#include "runtime/threads/parallel.h"
#include "w4jit/parallel.hpp"

namespace w4jit::perf {
namespace {

using Clock = std::chrono::steady_clock;

double Us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

// state.range(0): 0 pool, 1 OpenMP; range(1): bytes each thread streams
// per run (0: empty chunks).
void BM_ParallelRun(benchmark::State& state) {
  const bool omp = state.range(0) == 1;
  const int64_t bytes = state.range(1);
  if (!SetThreadingBackend(omp ? ThreadingBackend::kOpenMP
                               : ThreadingBackend::kPool)
           .ok()) {
    state.SkipWithError("built without OpenMP");
    return;
  }
  constexpr int kThreads = 2;
  SetNumThreads(kThreads);
  // Two buffers per thread, alternated, so that a run reads what the run
  // before did not leave in the caches (2 x 2 x 32 MB > this L3).
  const int64_t words = bytes / 8;
  std::vector<internal::AlignedVector<uint64_t>> data(2 * kThreads);
  for (auto& d : data) d.assign(static_cast<size_t>(words), 1);
  std::vector<double> wall, late;
  int64_t taken_over = 0, runs = 0;
  std::atomic<uint64_t> sink{0};
  const std::thread::id caller = std::this_thread::get_id();
  for (auto _ : state) {
    Clock::time_point start[kThreads];
    bool by_caller[kThreads] = {};
    const int flip = static_cast<int>(runs & 1);
    const Clock::time_point t0 = Clock::now();
    internal::ParallelRun(kThreads, [&](int c) {
      start[c] = Clock::now();
      by_caller[c] = std::this_thread::get_id() == caller;
      const uint64_t* p = data[2 * c + flip].data();
      uint64_t s = 0;
      for (int64_t i = 0; i < words; i += 8) s += p[i];
      sink.fetch_add(s, std::memory_order_relaxed);
    });
    const Clock::time_point t1 = Clock::now();
    wall.push_back(Us(t1 - t0));
    double last = 0;
    for (int c = 1; c < kThreads; ++c) {
      last = std::max(last, Us(start[c] - t0));
      taken_over += by_caller[c] ? 1 : 0;
    }
    late.push_back(last);
    ++runs;
  }
  SetNumThreads(0);
  (void)SetThreadingBackend(ThreadingBackend::kPool);
  benchmark::DoNotOptimize(sink.load());
  state.counters["min_us"] = Quantile(wall, 0);
  state.counters["p50_us"] = Quantile(wall, 0.5);
  state.counters["p90_us"] = Quantile(wall, 0.9);
  state.counters["p90/min"] = Quantile(wall, 0.9) / Quantile(wall, 0);
  state.counters["late_p50_us"] = Quantile(late, 0.5);
  state.counters["late_p90_us"] = Quantile(late, 0.9);
  state.counters["taken_over%"] =
      runs > 0 ? 100.0 * static_cast<double>(taken_over) /
                     static_cast<double>(runs * (kThreads - 1))
               : 0;
}
BENCHMARK(BM_ParallelRun)
    ->ArgNames({"omp", "bytes"})
    ->ArgsProduct({{0, 1}, {0, 1 << 20, 4 << 20, 32 << 20}})
    ->UseRealTime();

}  // namespace
}  // namespace w4jit::perf
