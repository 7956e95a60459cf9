// The pool runs on the CPUs the process may use, not on the mask a runtime
// put on the thread that created it (runtime/threads/process_cpus.h), and the
// default thread count is that set's size.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/threads/omp_backend.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/process_cpus.h"
#include "runtime/threads/spin_pool.h"
#include "w4jit/parallel.hpp"

namespace w4jit {
namespace {

using internal::ProcessCpus;
using internal::SpinPool;
using internal::ThreadCpus;

TEST(ThreadAffinity, ParsesCpuLists) {
  std::vector<int> cpus;
  EXPECT_TRUE(internal::ParseCpuList("0-2,5,7-8\n", &cpus));
  EXPECT_EQ(cpus, (std::vector<int>{0, 1, 2, 5, 7, 8}));
  cpus.clear();
  EXPECT_TRUE(internal::ParseCpuList("", &cpus));
  EXPECT_TRUE(cpus.empty());
  for (const char* bad : {"x", "1-", "3-1", "1,,2", "99999", "1 2"}) {
    EXPECT_FALSE(internal::ParseCpuList(bad, &cpus)) << bad;
  }
}

TEST(ThreadAffinity, WorkerCpusRule) {
  const std::vector<int> all = {0, 1, 2, 3};
  // Caller pinned to CPU 2 (a runtime did it): pinned workers take the
  // other CPUs in order, then wrap round starting at the caller's.
  EXPECT_EQ(SpinPool::WorkerCpus(1, 4, true, all, {2}), std::vector<int>{0});
  EXPECT_EQ(SpinPool::WorkerCpus(2, 4, true, all, {2}), std::vector<int>{1});
  EXPECT_EQ(SpinPool::WorkerCpus(3, 4, true, all, {2}), std::vector<int>{3});
  EXPECT_EQ(SpinPool::WorkerCpus(4, 6, true, all, {2}), std::vector<int>{2});
  // Unpinned: off the caller's CPU while the rest has a CPU per worker.
  EXPECT_EQ(SpinPool::WorkerCpus(1, 4, false, all, {2}),
            (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(SpinPool::WorkerCpus(1, 5, false, all, {2}), all);
  // Caller free to run anywhere: compact order, and the whole set.
  EXPECT_EQ(SpinPool::WorkerCpus(1, 4, true, all, all), std::vector<int>{1});
  EXPECT_EQ(SpinPool::WorkerCpus(3, 4, true, all, all), std::vector<int>{3});
  EXPECT_EQ(SpinPool::WorkerCpus(1, 4, false, all, all), all);
  // A caller mask outside the process's set (cannot come from the OS, but
  // the rule must not break on it): the process's set.
  EXPECT_EQ(SpinPool::WorkerCpus(1, 2, false, {0, 1}, {5}),
            (std::vector<int>{0, 1}));
}

// What the threads of one pool run saw: each chunk waits until all have
// started, so with one chunk per thread every thread runs exactly one.
struct Seen {
  std::vector<int> mask;
  int cpu = -1;
};

std::vector<Seen> RunOnePerThread(int threads) {
  std::vector<Seen> seen(static_cast<size_t>(threads));
  std::atomic<int> started{0};
  std::atomic<bool> all_started{true};
  internal::ParallelRun(threads, [&](int c) {
    started.fetch_add(1);
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < threads) {
      if (std::chrono::steady_clock::now() > end) {
        all_started = false;
        break;
      }
      std::this_thread::yield();
    }
    // Let the scheduler place a thread whose mask has just changed.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    seen[c] = {ThreadCpus(), sched_getcpu()};
  });
  EXPECT_TRUE(all_started.load()) << "not every pool thread ran a chunk";
  return seen;
}

// Checks the pool of `threads` threads created by the calling thread,
// which is pinned to `caller_cpu` while the process may use `process`.
// Returns a description of the first violation, or "".
std::string CheckPool(int threads, bool pin, int caller_cpu,
                      const std::vector<int>& process) {
  SetThreadPinning(pin);
  SetNumThreads(threads);
  const std::vector<Seen> seen = RunOnePerThread(threads);
  SetNumThreads(0);
  SetThreadPinning(false);
  std::set<int> cpus;
  for (size_t t = 0; t < seen.size(); ++t) {
    const Seen& s = seen[t];
    const std::string who =
        "pin=" + std::to_string(pin) + " thread " + std::to_string(t) + ": ";
    if (t == 0) {
      if (s.mask != std::vector<int>{caller_cpu}) return who + "caller moved";
      continue;
    }
    for (int c : s.mask) {
      if (!std::binary_search(process.begin(), process.end(), c)) {
        return who + "CPU " + std::to_string(c) + " outside the process";
      }
      if (c == caller_cpu) return who + "shares the caller's CPU";
    }
    if (pin && s.mask.size() != 1) return who + "not pinned to one CPU";
    if (pin && !cpus.insert(s.mask[0]).second) return who + "CPU taken twice";
  }
  return "";
}

// The whole rule in a process whose initial thread is pinned to one CPU
// of a larger set before the pool is first used: `process` is what the
// process may use.
std::string CheckPinnedProcess(const std::vector<int>& process) {
  if (ProcessCpus() != process) return "ProcessCpus is not the process's set";
  if (GetNumThreads() != static_cast<int>(process.size())) {
    return "default thread count " + std::to_string(GetNumThreads());
  }
  const std::vector<int> caller = ThreadCpus();
  if (caller.size() != 1) return "the caller is not pinned";
  const int threads = static_cast<int>(process.size());
  for (bool pin : {false, true}) {
    const std::string error = CheckPool(threads, pin, caller[0], process);
    if (!error.empty()) return error;
  }
  // Unpinned, all threads busy: on 2 CPUs the worker's only CPU is the
  // other one, so the two run on distinct CPUs.
  if (process.size() == 2) {
    SetNumThreads(2);
    const std::vector<Seen> seen = RunOnePerThread(2);
    SetNumThreads(0);
    if (seen[0].cpu == seen[1].cpu) return "both threads on one CPU";
  }
  return "";
}

// A forked child pins its initial thread (as a runtime loaded before the
// first layer would) before the pool's first use.
TEST(ThreadAffinityDeathTest, PoolIgnoresThePinOfItsCreator) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::vector<int> process = ThreadCpus();
  if (process.size() < 2) GTEST_SKIP() << "needs a process with 2+ CPUs";
  EXPECT_EXIT(
      {
        (void)SetThreadingBackend(ThreadingBackend::kPool);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(process[0], &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) {
          std::exit(3);
        }
        const std::string error = CheckPinnedProcess(process);
        if (!error.empty()) {
          fprintf(stderr, "%s\n", error.c_str());
          std::exit(1);
        }
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// Run by ctest as threading_omp_proc_bind with OMP_PROC_BIND=close and
// OMP_PLACES=threads: libgomp pinned this process's initial thread to one
// CPU when it loaded, before any w4jit code ran.
TEST(ThreadAffinity, PoolUnderOpenMpBinding) {
  const char* bind = std::getenv("OMP_PROC_BIND");
  if (bind == nullptr) {
    GTEST_SKIP() << "runs under OMP_PROC_BIND (ctest threading_omp_proc_bind)";
  }
  if (!internal::OpenMpAvailable()) GTEST_SKIP() << "built without OpenMP";
  std::vector<int> places = internal::OpenMpPlaceCpus();
  std::sort(places.begin(), places.end());
  places.erase(std::unique(places.begin(), places.end()), places.end());
  if (places.size() < 2) GTEST_SKIP() << "OpenMP has fewer than 2 CPUs";
  ASSERT_EQ(ThreadCpus().size(), 1u) << "libgomp did not pin the thread";
  EXPECT_EQ(ProcessCpus(), places);
  (void)SetThreadingBackend(ThreadingBackend::kPool);
  EXPECT_EQ(CheckPinnedProcess(places), "");
}

}  // namespace
}  // namespace w4jit
