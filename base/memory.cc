#include "base/memory.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "base/env.h"

namespace w4jit::internal {
namespace {

std::atomic<BufferAllocator*> g_hook{nullptr};
std::atomic<uint64_t> g_generation{0};

// Blocks a hook allocated, so that they go back to it even after it was
// uninstalled (per-thread scratch can outlive the hook). Consulted only
// once some hook has allocated: the default path is one atomic load.
struct HookedBlocks {
  std::mutex mu;
  absl::flat_hash_map<void*, BufferAllocator*> owner;
};
std::atomic<bool> g_any_hooked_block{false};

HookedBlocks& Blocks() {
  static HookedBlocks* blocks = new HookedBlocks;  // used at thread exit
  return *blocks;
}

thread_local bool t_huge_pages = false;

bool EnvHugePages() {
  static const bool on = [] {
    const char* v = GetEnv(EnvVar::kHugePages);
    return v != nullptr && std::string(v) == "1";
  }();
  return on;
}

}  // namespace

ScopedHugePages::ScopedHugePages(bool on) : previous_(t_huge_pages) {
  t_huge_pages = on || previous_;
}
ScopedHugePages::~ScopedHugePages() { t_huge_pages = previous_; }

bool HugePagesRequested() { return t_huge_pages || EnvHugePages(); }

const char* TransparentHugePagesMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  if (!std::getline(f, text)) return "unavailable";
  for (const char* mode : {"always", "madvise", "never"}) {
    if (text.find(std::string("[") + mode + "]") != std::string::npos) {
      return mode;
    }
  }
  return "unavailable";
}

void* AlignedAllocate(size_t bytes, size_t min_align) {
  if (bytes == 0) bytes = 1;
  if (BufferAllocator* hook = g_hook.load(std::memory_order_acquire)) {
    void* p = hook->Allocate(bytes, min_align < 1 ? 1 : min_align);
    if (p == nullptr) throw AllocationError(bytes);
    HookedBlocks& b = Blocks();
    std::lock_guard<std::mutex> lock(b.mu);
    b.owner[p] = hook;
    g_any_hooked_block.store(true, std::memory_order_release);
    return p;
  }
  if (bytes >= kHugePageBytes && HugePagesRequested()) {
    const size_t size =
        (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, size);
    if (p == nullptr) throw AllocationError(bytes);
    // Advice only: where the OS does not grant them, 4 KB pages serve.
    (void)madvise(p, size, MADV_HUGEPAGE);
    return p;
  }
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) throw AllocationError(bytes);
  return p;
}

void AlignedFree(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (g_any_hooked_block.load(std::memory_order_acquire)) {
    BufferAllocator* owner = nullptr;
    {
      HookedBlocks& b = Blocks();
      std::lock_guard<std::mutex> lock(b.mu);
      if (auto it = b.owner.find(p); it != b.owner.end()) {
        owner = it->second;
        b.owner.erase(it);
      }
    }
    if (owner != nullptr) {
      owner->Free(p, bytes == 0 ? 1 : bytes);
      return;
    }
  }
  std::free(p);
}

ScopedAllocatorHook::ScopedAllocatorHook(BufferAllocator* hook) {
  g_hook.store(hook, std::memory_order_release);
  g_generation.fetch_add(1);
}

ScopedAllocatorHook::~ScopedAllocatorHook() {
  g_hook.store(nullptr, std::memory_order_release);
  g_generation.fetch_add(1);
}

bool AllocatorHooked() {
  return g_hook.load(std::memory_order_acquire) != nullptr;
}

uint64_t AllocatorGeneration() { return g_generation.load(); }

}  // namespace w4jit::internal
