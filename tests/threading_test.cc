// The parallel runtime: w4jit's spinning pool, the OpenMP backend and a
// host backend. Every chunk runs once; Run from several threads at once,
// from inside a chunk and from inside a host's OpenMP region; switching
// backends and thread counts between calls; identical results on every
// backend and thread count; an idle process goes quiet after the spin
// bound; exit with spinning workers is clean. Run under TSan by .ci/run.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/threads/omp_backend.h"
#include "runtime/threads/parallel.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

#ifdef W4JIT_TEST_OPENMP
#include <omp.h>
#endif

namespace w4jit {
namespace {

using testing::MakeLayer;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunToF32;

// A host backend: one new thread per chunk, so that it differs from both
// of w4jit's own.
class ThreadPerChunkBackend final : public ParallelBackend {
 public:
  int concurrency() const override { return 3; }
  void Run(int num_chunks, const std::function<void(int)>& fn) override {
    std::vector<std::thread> threads;
    for (int i = 1; i < num_chunks; ++i) threads.emplace_back(fn, i);
    fn(0);
    for (std::thread& t : threads) t.join();
  }
};

// Each way w4jit's work can be run, set up and torn down by Use().
enum class Backend { kPool, kOpenMP, kHost };

const char* Name(Backend b) {
  switch (b) {
    case Backend::kPool:
      return "pool";
    case Backend::kOpenMP:
      return "openmp";
    case Backend::kHost:
      return "host";
  }
  return "?";
}

std::vector<Backend> AllBackends() {
  std::vector<Backend> all = {Backend::kPool, Backend::kHost};
  if (internal::OpenMpAvailable()) all.push_back(Backend::kOpenMP);
  return all;
}

// Selects `b` with `threads` threads; the destructor restores the defaults.
class UseBackend {
 public:
  UseBackend(Backend b, int threads) {
    SetNumThreads(threads);
    SetParallelBackend(b == Backend::kHost
                           ? std::make_shared<ThreadPerChunkBackend>()
                           : nullptr);
    EXPECT_TRUE(SetThreadingBackend(b == Backend::kOpenMP
                                        ? ThreadingBackend::kOpenMP
                                        : ThreadingBackend::kPool)
                    .ok());
  }
  ~UseBackend() {
    SetParallelBackend(nullptr);
    (void)SetThreadingBackend(ThreadingBackend::kPool);
    SetNumThreads(0);
  }
};

// Every chunk exactly once, for chunk counts around the thread count.
void ExpectEachChunkOnce() {
  for (int chunks : {1, 2, 3, 5, 17, 64}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(chunks));
    internal::ParallelRun(chunks, [&](int c) { hits[c].fetch_add(1); });
    for (int c = 0; c < chunks; ++c) {
      ASSERT_EQ(hits[c].load(), 1) << "chunk " << c << " of " << chunks;
    }
  }
}

TEST(Threading, EveryChunkRunsOnceOnEveryBackend) {
  for (Backend b : AllBackends()) {
    for (int threads : {1, 2, 3, 4}) {
      SCOPED_TRACE(std::string(Name(b)) + " threads " +
                   std::to_string(threads));
      UseBackend use(b, threads);
      // A host backend starts a thread per chunk: fewer repetitions.
      const int reps = b == Backend::kHost ? 5 : 50;
      for (int rep = 0; rep < reps; ++rep) ExpectEachChunkOnce();
    }
  }
}

TEST(Threading, SettingsRoundTripAndRejectBadValues) {
  const int spin = GetSpinMicroseconds();
  SetSpinMicroseconds(-1);  // ignored
  EXPECT_EQ(GetSpinMicroseconds(), spin);
  SetSpinMicroseconds(77);
  EXPECT_EQ(GetSpinMicroseconds(), 77);
  SetSpinMicroseconds(spin);
  absl::Status bad = SetThreadingBackend(static_cast<ThreadingBackend>(9));
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("9"), std::string::npos) << bad;
  EXPECT_EQ(GetThreadingBackend(), ThreadingBackend::kPool);
  absl::Status omp = SetThreadingBackend(ThreadingBackend::kOpenMP);
  if (internal::OpenMpAvailable()) {
    EXPECT_TRUE(omp.ok()) << omp;
    EXPECT_EQ(GetThreadingBackend(), ThreadingBackend::kOpenMP);
  } else {
    EXPECT_EQ(omp.code(), absl::StatusCode::kUnimplemented);
  }
  ASSERT_TRUE(SetThreadingBackend(ThreadingBackend::kPool).ok());
  EXPECT_FALSE(GetThreadPinning());
  SetThreadPinning(true);
  EXPECT_TRUE(GetThreadPinning());
  SetNumThreads(2);
  ExpectEachChunkOnce();  // a pinned pool works
  SetThreadPinning(false);
  SetNumThreads(0);
}

// Layers whose M = 1, small-M and large-M paths all split columns over
// several blocks.
struct TestLayers {
  struct One {
    LayerDesc desc;
    internal::CanonicalWeights w;
    std::unique_ptr<Layer> layer;
  };
  std::vector<One> layers;

  TestLayers() {
    for (Mode mode : {Mode::kDA8W4, Mode::kW4A16}) {
      One o;
      o.desc.n = 320;
      o.desc.k = 256;
      o.desc.group_size = 64;
      o.desc.mode = mode;
      o.desc.act_dtype = DType::kBF16;
      o.desc.out_dtype = DType::kF32;
      o.desc.scale_dtype = DType::kBF16;
      o.w = RandomWeights(o.desc, 3);
      auto layer = MakeLayer(o.desc, o.w);
      EXPECT_TRUE(layer.ok()) << layer.status();
      if (layer.ok()) o.layer = std::move(*layer);
      layers.push_back(std::move(o));
    }
  }
};

// 520 x 256 is past the size from which W4A16 packs x on several threads
// (runtime/w4a16/w4a16_pack.cc).
constexpr int64_t kMs[] = {1, 3, 40, 520};

// Outputs of every test layer at every M in kMs, in order.
std::vector<std::vector<float>> RunAll(const TestLayers& t) {
  std::vector<std::vector<float>> out;
  for (const TestLayers::One& o : t.layers) {
    if (!o.layer) continue;
    for (int64_t m : kMs) {
      const auto x = RandomActivations(o.desc, m, o.desc.k, 5);
      auto y = RunToF32(*o.layer, m, x, o.desc.k);
      EXPECT_TRUE(y.ok()) << y.status();
      out.push_back(y.ok() ? *y : std::vector<float>());
    }
  }
  return out;
}

bool BitIdentical(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float))) {
      return false;
    }
  }
  return true;
}

TEST(Threading, ResultsBitIdenticalAcrossBackendsAndThreadCounts) {
  const TestLayers t;
  std::vector<std::vector<float>> want;
  {
    UseBackend use(Backend::kPool, 1);
    want = RunAll(t);
  }
  for (Backend b : AllBackends()) {
    for (int threads : {1, 2, 3, 5}) {
      SCOPED_TRACE(std::string(Name(b)) + " threads " +
                   std::to_string(threads));
      UseBackend use(b, threads);
      EXPECT_TRUE(BitIdentical(RunAll(t), want));
    }
  }
}

TEST(Threading, SwitchingBackendsAndThreadCountsBetweenCalls) {
  const TestLayers t;
  std::vector<std::vector<float>> want;
  {
    UseBackend use(Backend::kPool, 1);
    want = RunAll(t);
  }
  const std::vector<Backend> all = AllBackends();
  for (int i = 0; i < 24; ++i) {
    UseBackend use(all[i % all.size()], 1 + i % 4);
    SetSpinMicroseconds(i % 3 == 0 ? 0 : 500);  // sleeping and spinning
    ASSERT_TRUE(BitIdentical(RunAll(t), want)) << "switch " << i;
  }
  SetSpinMicroseconds(1000);
}

// Several host threads each run layers at once, on every backend.
TEST(Threading, ConcurrentRunFromSeveralThreadsOnEveryBackend) {
  const TestLayers t;
  std::vector<std::vector<float>> want;
  {
    UseBackend use(Backend::kPool, 1);
    want = RunAll(t);
  }
  for (Backend b : AllBackends()) {
    SCOPED_TRACE(Name(b));
    UseBackend use(b, 2);
    std::atomic<int> wrong{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c) {
      callers.emplace_back([&] {
        for (int rep = 0; rep < 5; ++rep) {
          if (!BitIdentical(RunAll(t), want)) wrong.fetch_add(1);
        }
      });
    }
    for (std::thread& th : callers) th.join();
    EXPECT_EQ(wrong.load(), 0);
  }
}

// The first Run of a new pool gets its workers' help even when a worker
// thread starts only after the job was opened: chunk 0 waits for chunk 1
// to start on another thread.
TEST(Threading, NewPoolsWorkersJoinTheirFirstRun) {
  for (int rep = 0; rep < 20; ++rep) {
    // Five thread counts cycle through the four pools kept: each rep makes
    // a new one.
    UseBackend use(Backend::kPool, 2 + rep % 5);
    std::atomic<bool> started{false};
    std::thread::id first, second;
    internal::ParallelRun(2, [&](int c) {
      if (c == 1) {
        second = std::this_thread::get_id();
        started.store(true);
        return;
      }
      first = std::this_thread::get_id();
      const auto give_up =
          std::chrono::steady_clock::now() + std::chrono::seconds(5);
      while (!started.load() && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
      }
    });
    ASSERT_NE(first, second) << "the new pool's workers missed run " << rep;
  }
}

// A chunk that itself calls ParallelRun (a pool worker calling Run) runs
// it inline instead of waiting for the pool it is part of.
TEST(Threading, RunFromInsideAChunkDoesNotDeadlock) {
  for (Backend b : AllBackends()) {
    SCOPED_TRACE(Name(b));
    UseBackend use(b, 2);
    std::atomic<int> inner{0};
    internal::ParallelRun(4, [&](int) {
      internal::ParallelRun(3, [&](int) { inner.fetch_add(1); });
    });
    EXPECT_EQ(inner.load(), 12);
  }
}

#ifdef W4JIT_TEST_OPENMP
// A host that calls Run from inside its own OpenMP parallel region: no
// deadlock on any backend, and the same results.
TEST(Threading, RunFromInsideHostOpenMpRegion) {
  const TestLayers t;
  std::vector<std::vector<float>> want;
  {
    UseBackend use(Backend::kPool, 1);
    want = RunAll(t);
  }
  for (Backend b : AllBackends()) {
    SCOPED_TRACE(Name(b));
    UseBackend use(b, 2);
    std::atomic<int> wrong{0};
#pragma omp parallel num_threads(2)
    {
      if (!BitIdentical(RunAll(t), want)) wrong.fetch_add(1);
    }
    EXPECT_EQ(wrong.load(), 0);
  }
}
#endif

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// After a burst of calls the pool's workers spin for the spin bound, then
// sleep: the process uses next to no CPU while idle.
TEST(Threading, IdleProcessIsQuietAfterTheSpinBound) {
  const TestLayers t;
  UseBackend use(Backend::kPool, 2);
  SetSpinMicroseconds(5000);
  for (int rep = 0; rep < 20; ++rep) RunAll(t);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // > 5 ms
  const double cpu0 = CpuSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double idle_cpu = CpuSeconds() - cpu0;
  SetSpinMicroseconds(1000);
  // A spinning worker would use ~0.3 s here.
  EXPECT_LT(idle_cpu, 0.03) << "CPU seconds used while idle";
}

// Returning from main while workers spin: exit is clean (status 0).
TEST(ThreadingDeathTest, ExitWithSpinningWorkersIsClean) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        const TestLayers t;
        SetNumThreads(2);
        SetSpinMicroseconds(1000000);  // still spinning at exit
        RunAll(t);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// W4JIT_THREADING, W4JIT_SPIN_US and W4JIT_PIN are read at first use;
// invalid values are logged and ignored. In a fresh process (death test
// re-executes the binary), so that the state is not yet initialised.
TEST(ThreadingDeathTest, EnvironmentVariables) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const bool omp = internal::OpenMpAvailable();
  setenv("W4JIT_THREADING", omp ? "omp" : "pool", 1);
  setenv("W4JIT_SPIN_US", "123", 1);
  setenv("W4JIT_PIN", "1", 1);
  EXPECT_EXIT(
      {
        const bool ok =
            GetThreadingBackend() ==
                (omp ? ThreadingBackend::kOpenMP : ThreadingBackend::kPool) &&
            GetSpinMicroseconds() == 123 && GetThreadPinning();
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  setenv("W4JIT_THREADING", "fibers", 1);
  setenv("W4JIT_SPIN_US", "-4", 1);
  setenv("W4JIT_PIN", "yes", 1);
  EXPECT_EXIT(
      {
        std::vector<std::string> logged;
        SetLogHook(
            [&](LogLevel, std::string_view m) { logged.emplace_back(m); });
        const bool defaults =
            GetThreadingBackend() == ThreadingBackend::kPool &&
            GetSpinMicroseconds() == 1000 && !GetThreadPinning();
        std::string all;
        for (const std::string& m : logged) all += m + "\n";
        const bool named =
            all.find("W4JIT_THREADING=\"fibers\"") != std::string::npos &&
            all.find("W4JIT_SPIN_US=\"-4\"") != std::string::npos &&
            all.find("W4JIT_PIN=\"yes\"") != std::string::npos;
        std::exit(defaults && named ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unsetenv("W4JIT_THREADING");
  unsetenv("W4JIT_SPIN_US");
  unsetenv("W4JIT_PIN");
}

}  // namespace
}  // namespace w4jit
