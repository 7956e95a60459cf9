// Memory flush against PROT_NONE pages, so that any access past either end
// of a buffer faults: GuardedBuffer for buffers a test hands to the
// library (x, y), GuardPageAllocator for the ones the library allocates
// itself (packed weights, scratch), installed with
// internal::ScopedAllocatorHook (base/memory.h).
#ifndef W4JIT_TESTS_UTIL_GUARD_PAGES_H_
#define W4JIT_TESTS_UTIL_GUARD_PAGES_H_

#include <cstddef>
#include <cstdint>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "base/memory.h"

namespace w4jit::testing {

// Which end of the buffer touches a PROT_NONE page. The other end has a
// guard page too, less than a page away.
enum class Flush { kFront, kBack };
const char* ToString(Flush f);

// One mapping: PROT_NONE page, the data's pages (read+write), PROT_NONE
// page. For kBack the data starts `bytes` (rounded up to `align`) before
// the second guard.
class GuardedBuffer {
 public:
  GuardedBuffer(size_t bytes, Flush flush, size_t align = 1);
  ~GuardedBuffer();
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* base_ = nullptr;
  size_t mapped_ = 0;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// Every allocation is a GuardedBuffer placed per flush(). Thread-safe.
// Blocks must go back to the allocator that made them, so an instance has
// to outlive them: use Instance().
class GuardPageAllocator final : public internal::BufferAllocator {
 public:
  // The process-wide instance (never destroyed).
  static GuardPageAllocator& Instance();

  void set_flush(Flush f);
  int64_t allocations() const;

  void* Allocate(size_t bytes, size_t align) override;
  void Free(void* p, size_t bytes) override;

 private:
  GuardPageAllocator() = default;
  mutable std::mutex mu_;
  Flush flush_ = Flush::kBack;
  int64_t allocations_ = 0;
  absl::flat_hash_map<void*, GuardedBuffer*> live_;
};

}  // namespace w4jit::testing

#endif  // W4JIT_TESTS_UTIL_GUARD_PAGES_H_
