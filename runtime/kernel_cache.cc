#include "runtime/kernel_cache.h"

#include <atomic>
#include <chrono>
#include <iterator>
#include <list>
#include <mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "base/env.h"
#include "base/log.h"
#include "base/memory.h"
#include "w4jit/kernel_cache.hpp"

namespace w4jit {
namespace internal {
namespace {

constexpr int64_t kDefaultCapacity = 1024;

struct Entry {
  std::once_flag once;
  std::shared_ptr<const Generator> generator;
  absl::Status status;
  std::atomic<bool> done{false};  // set once generator/status are final
};

struct Slot {
  std::shared_ptr<Entry> entry;
  std::list<KernelConfig>::iterator recency;  // its place in Cache::recency
};

struct Cache {
  absl::Mutex mu;
  absl::flat_hash_map<KernelConfig, Slot, KernelConfigHash> map
      ABSL_GUARDED_BY(mu);
  // Most recently requested first.
  std::list<KernelConfig> recency ABSL_GUARDED_BY(mu);
  int64_t capacity ABSL_GUARDED_BY(mu) = kDefaultCapacity;
  KernelCacheStats stats ABSL_GUARDED_BY(mu);

  // Drops the least recently requested entries beyond the capacity.
  void Trim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    while (static_cast<int64_t>(map.size()) > capacity) {
      map.erase(recency.back());
      recency.pop_back();
      ++stats.evictions;
    }
  }
  void Erase(
      absl::flat_hash_map<KernelConfig, Slot, KernelConfigHash>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    recency.erase(it->second.recency);
    map.erase(it);
  }
};

// W4JIT_KERNEL_CACHE_CAPACITY, or the default.
int64_t CapacityFromEnvironment() {
  const char* v = GetEnv(EnvVar::kKernelCacheCapacity);
  if (v == nullptr) return kDefaultCapacity;
  int64_t n = 0;
  if (absl::SimpleAtoi(v, &n) && n >= 1) return n;
  Log(LogLevel::kWarning,
      absl::StrCat("W4JIT_KERNEL_CACHE_CAPACITY=\"", v,
                   "\" ignored (expected a number of kernels >= 1); using ",
                   kDefaultCapacity));
  return kDefaultCapacity;
}

Cache& GetCache() {
  static Cache* cache = [] {
    auto* c = new Cache;  // never destroyed: layers may outlive main
    absl::MutexLock lock(&c->mu);
    c->capacity = CapacityFromEnvironment();
    return c;
  }();
  return *cache;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Generator>> GetOrCreateKernel(
    const KernelConfig& key, const GeneratorFactory& factory) {
  Cache& cache = GetCache();
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&cache.mu);
    auto [it, inserted] = cache.map.try_emplace(key);
    if (inserted) {
      it->second.entry = std::make_shared<Entry>();
      cache.recency.push_front(key);
      it->second.recency = cache.recency.begin();
    } else {
      ++cache.stats.hits;
      cache.recency.splice(cache.recency.begin(), cache.recency,
                           it->second.recency);
    }
    entry = it->second.entry;
    // The new entry is the most recent: eviction takes others (and this
    // thread holds `entry` either way).
    cache.Trim();
  }
  // Generation happens outside the map lock so that unrelated keys are not
  // serialised behind a slow JIT.
  std::call_once(entry->once, [&] {
    const auto start = std::chrono::steady_clock::now();
    try {
      std::unique_ptr<Generator> generator = factory();
      entry->status = generator ? generator->Create()
                                : absl::InternalError("no generator for " +
                                                      KernelConfigName(key));
      entry->generator = std::move(generator);
    } catch (const AllocationError& e) {
      entry->status = absl::ResourceExhaustedError(
          absl::StrFormat("JIT %s: cannot map a %d-byte code buffer",
                          KernelConfigName(key), e.bytes()));
    } catch (const std::exception& e) {
      entry->status =
          absl::InternalError(KernelConfigName(key) + ": " + e.what());
    }
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count();
    entry->done.store(true, std::memory_order_release);
    absl::MutexLock lock(&cache.mu);
    ++cache.stats.generations;
    cache.stats.total_generation_ms += ms;
  });
  if (!entry->status.ok()) {
    // Running out of memory is not a property of the key: forget the
    // failure so that a later request (when memory is back) tries again.
    if (absl::IsResourceExhausted(entry->status)) {
      absl::MutexLock lock(&cache.mu);
      auto it = cache.map.find(key);
      if (it != cache.map.end() && it->second.entry == entry) {
        cache.Erase(it);
      }
    }
    return entry->status;
  }
  return entry->generator;
}

KernelCacheStats GetKernelCacheStats() {
  Cache& cache = GetCache();
  absl::MutexLock lock(&cache.mu);
  KernelCacheStats s = cache.stats;
  s.entries = static_cast<int64_t>(cache.map.size());
  s.capacity = cache.capacity;
  return s;
}

std::vector<KernelInfo> ListKernels() {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    Cache& cache = GetCache();
    absl::MutexLock lock(&cache.mu);
    for (const auto& [key, slot] : cache.map) entries.push_back(slot.entry);
  }
  std::vector<KernelInfo> out;
  for (const auto& e : entries) {
    // Only finished generations; a finished entry never changes again.
    if (e->done.load(std::memory_order_acquire) && e->generator != nullptr &&
        e->generator->created()) {
      out.push_back({e->generator->name(), e->generator->getCode(),
                     e->generator->getSize()});
    }
  }
  return out;
}

}  // namespace internal

absl::Status SetKernelCacheCapacity(int64_t kernels) {
  if (kernels < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel cache capacity ", kernels, " is not a number of kernels >= 1"));
  }
  internal::Cache& cache = internal::GetCache();
  absl::MutexLock lock(&cache.mu);
  cache.capacity = kernels;
  cache.Trim();
  return absl::OkStatus();
}

int64_t GetKernelCacheCapacity() {
  internal::Cache& cache = internal::GetCache();
  absl::MutexLock lock(&cache.mu);
  return cache.capacity;
}

}  // namespace w4jit
