#include "runtime/threads/parallel.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/env.h"
#include "base/log.h"
#include "runtime/threads/omp_backend.h"
#include "runtime/threads/process_cpus.h"
#include "runtime/threads/spin_pool.h"
#include "w4jit/parallel.hpp"

namespace w4jit {
namespace internal {
namespace {

constexpr int kDefaultSpinUs = 1000;
constexpr size_t kMaxPools = 4;

// The default thread count: the CPUs the process may use, not the mask of
// the calling thread (which a runtime may have pinned to one CPU).
int AvailableCores() { return static_cast<int>(ProcessCpus().size()); }

struct State {
  std::mutex mu;
  int requested = 0;  // 0: default
  ThreadingBackend threading = ThreadingBackend::kPool;
  bool pin = false;
  std::shared_ptr<ParallelBackend> host;
  // Pools of the recently used thread counts and pinning, newest last:
  // switching between them (SetNumThreads between calls) reuses threads
  // that are already spread over the cores instead of starting new ones.
  std::vector<std::shared_ptr<SpinPool>> pools;
  std::shared_ptr<ParallelBackend> omp;
  int omp_threads = -1;  // the request `omp` was made for
  // Read by the pool's workers at every wait, so it is not under mu.
  std::atomic<int> spin_us{kDefaultSpinUs};
};

// Parses a non-negative decimal int; false on anything else.
bool ParseNonNegative(const char* s, int* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0 || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

void Ignored(const char* name, const char* value, const char* expected) {
  Log(LogLevel::kWarning,
      absl::StrCat(name, "=\"", value, "\" ignored (", expected, ")"));
}

// W4JIT_THREADING, W4JIT_SPIN_US and W4JIT_PIN, once, before the first
// use of the state; the API calls after that win.
void ReadEnvironment(State* s) {
  if (const char* v = GetEnv(EnvVar::kThreading)) {
    const std::string t = v;
    if (t == "pool") {
      s->threading = ThreadingBackend::kPool;
    } else if (t == "omp" && OpenMpAvailable()) {
      s->threading = ThreadingBackend::kOpenMP;
    } else if (t == "omp") {
      Ignored("W4JIT_THREADING", v, "w4jit was built without OpenMP");
    } else {
      Ignored("W4JIT_THREADING", v, "expected pool or omp");
    }
  }
  if (const char* v = GetEnv(EnvVar::kSpinUs)) {
    int us = 0;
    if (ParseNonNegative(v, &us)) {
      s->spin_us.store(us);
    } else {
      Ignored("W4JIT_SPIN_US", v, "expected microseconds >= 0");
    }
  }
  if (const char* v = GetEnv(EnvVar::kPin)) {
    const std::string t = v;
    if (t == "0" || t == "1") {
      s->pin = t == "1";
    } else {
      Ignored("W4JIT_PIN", v, "expected 0 or 1");
    }
  }
}

State& GetState() {
  static State* state = [] {
    auto* s = new State;  // never destroyed: used at exit
    ReadEnvironment(s);
    return s;
  }();
  return *state;
}

std::shared_ptr<ParallelBackend> ActiveBackend() {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.host) return s.host;
  if (s.threading == ThreadingBackend::kOpenMP) {
    if (!s.omp || s.omp_threads != s.requested) {
      s.omp = MakeOpenMpBackend(s.requested);
      s.omp_threads = s.requested;
    }
    return s.omp;
  }
  const int want = s.requested > 0 ? s.requested : AvailableCores();
  for (const std::shared_ptr<SpinPool>& p : s.pools) {
    if (p->concurrency() == want && p->pinned() == s.pin) return p;
  }
  // An evicted pool lives on while a Run still holds it; its idle workers
  // are asleep once the spin bound has passed.
  if (s.pools.size() >= kMaxPools) s.pools.erase(s.pools.begin());
  s.pools.push_back(
      std::make_shared<SpinPool>(want, &s.spin_us, s.pin, ProcessCpus()));
  return s.pools.back();
}

}  // namespace

namespace {
thread_local int inline_depth = 0;
}  // namespace

InlineScope::InlineScope() { ++inline_depth; }
InlineScope::~InlineScope() { --inline_depth; }

int Concurrency() {
  if (inline_depth > 0) return 1;
  return std::max(1, ActiveBackend()->concurrency());
}

void ParallelRun(int num_chunks, const std::function<void(int)>& fn) {
  if (num_chunks <= 0) return;
  // Inside a host's OpenMP team the host has already parallelised: running
  // inline keeps both from waiting on each other's threads.
  if (num_chunks == 1 || inline_depth > 0 || InOpenMpParallel()) {
    for (int i = 0; i < num_chunks; ++i) fn(i);
    return;
  }
  ActiveBackend()->Run(num_chunks, fn);
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

absl::Status SetThreadingBackend(ThreadingBackend backend) {
  if (backend != ThreadingBackend::kPool &&
      backend != ThreadingBackend::kOpenMP) {
    return absl::InvalidArgumentError(
        absl::StrCat("threading backend ", static_cast<int>(backend),
                     " is not kPool (0) or kOpenMP (1)"));
  }
  if (backend == ThreadingBackend::kOpenMP && !internal::OpenMpAvailable()) {
    return absl::UnimplementedError(
        "threading backend kOpenMP: w4jit was built without OpenMP");
  }
  auto& s = internal::GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  s.threading = backend;
  return absl::OkStatus();
}

ThreadingBackend GetThreadingBackend() {
  auto& s = internal::GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.threading;
}

void SetSpinMicroseconds(int us) {
  if (us < 0) return;
  internal::GetState().spin_us.store(us);
}

int GetSpinMicroseconds() { return internal::GetState().spin_us.load(); }

void SetThreadPinning(bool on) {
  auto& s = internal::GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  s.pin = on;
}

bool GetThreadPinning() {
  auto& s = internal::GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.pin;
}

}  // namespace w4jit
