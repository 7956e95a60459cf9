#include "runtime/kernel_cache.h"

#include <atomic>
#include <chrono>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "base/memory.h"

namespace w4jit::internal {
namespace {

struct Entry {
  std::once_flag once;
  std::unique_ptr<Generator> generator;
  absl::Status status;
  std::atomic<bool> done{false};  // set once generator/status are final
};

struct Cache {
  absl::Mutex mu;
  absl::flat_hash_map<KernelKey, std::shared_ptr<Entry>> map
      ABSL_GUARDED_BY(mu);
  KernelCacheStats stats ABSL_GUARDED_BY(mu);
};

Cache& GetCache() {
  static Cache* cache = new Cache;  // never destroyed: kernels outlive main
  return *cache;
}

}  // namespace

absl::StatusOr<const Generator*> GetOrCreateKernel(
    const KernelKey& key, const GeneratorFactory& factory) {
  Cache& cache = GetCache();
  std::shared_ptr<Entry> entry;
  {
    absl::MutexLock lock(&cache.mu);
    auto [it, inserted] = cache.map.try_emplace(key);
    if (inserted) {
      it->second = std::make_shared<Entry>();
    } else {
      ++cache.stats.hits;
    }
    entry = it->second;
  }
  // Generation happens outside the map lock so that unrelated keys are not
  // serialised behind a slow JIT.
  std::call_once(entry->once, [&] {
    const auto start = std::chrono::steady_clock::now();
    try {
      entry->generator = factory();
      entry->status =
          entry->generator
              ? entry->generator->Create()
              : absl::InternalError("no generator for " + key.name());
    } catch (const AllocationError& e) {
      entry->status = absl::ResourceExhaustedError(absl::StrFormat(
          "JIT %s: cannot map a %d-byte code buffer", key.name(), e.bytes()));
    } catch (const std::exception& e) {
      entry->status = absl::InternalError(key.name() + ": " + e.what());
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
      if (it != cache.map.end() && it->second == entry) cache.map.erase(it);
    }
    return entry->status;
  }
  return entry->generator.get();
}

void ClearKernelCache() {
  Cache& cache = GetCache();
  absl::MutexLock lock(&cache.mu);
  cache.map.clear();
}

KernelCacheStats GetKernelCacheStats() {
  Cache& cache = GetCache();
  absl::MutexLock lock(&cache.mu);
  KernelCacheStats s = cache.stats;
  s.entries = static_cast<int64_t>(cache.map.size());
  return s;
}

std::vector<KernelInfo> ListKernels() {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    Cache& cache = GetCache();
    absl::MutexLock lock(&cache.mu);
    for (const auto& [key, entry] : cache.map) entries.push_back(entry);
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

}  // namespace w4jit::internal
