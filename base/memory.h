// Every buffer the library allocates for its kernels to read or write
// (packed weights, scales, bias, activation scratch) comes from here, so
// that:
//  - a failed allocation is an AllocationError that names the bytes it
//    wanted (Layer turns it into RESOURCE_EXHAUSTED), and
//  - tests can swap the allocator (ScopedAllocatorHook) for one that puts
//    each buffer flush against a PROT_NONE page, so that a kernel reading
//    or writing past either end of a buffer faults.
#ifndef W4JIT_BASE_MEMORY_H_
#define W4JIT_BASE_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace w4jit::internal {

// Thrown by AlignedAllocate when the memory is not there.
class AllocationError : public std::bad_alloc {
 public:
  explicit AllocationError(size_t bytes) : bytes_(bytes) {}
  const char* what() const noexcept override {
    return "w4jit: buffer allocation failed";
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
};

// Where kernel buffers come from. The default: aligned_alloc, 64-byte
// aligned. A hook must return memory aligned to at least `align` (a power
// of two, <= 64) and be callable from any thread.
class BufferAllocator {
 public:
  virtual ~BufferAllocator() = default;
  // nullptr on failure.
  virtual void* Allocate(size_t bytes, size_t align) = 0;
  virtual void Free(void* p, size_t bytes) = 0;
};

// `bytes` (> 0) aligned to 64 (or only to `min_align` under a hook that
// places buffers exactly, see ScopedAllocatorHook); throws AllocationError.
void* AlignedAllocate(size_t bytes, size_t min_align);
void AlignedFree(void* p, size_t bytes);

// Test hook: while it lives, kernel buffers come from `hook` (which must
// outlive it), and per-thread scratch is resized to exactly what each call
// needs (so that its end is the end of the allocation). Buffers allocated
// before keep their allocator: every buffer is freed by whoever allocated
// it. Not nestable; install it while no Run is in flight.
class ScopedAllocatorHook {
 public:
  explicit ScopedAllocatorHook(BufferAllocator* hook);
  ~ScopedAllocatorHook();
  ScopedAllocatorHook(const ScopedAllocatorHook&) = delete;
  ScopedAllocatorHook& operator=(const ScopedAllocatorHook&) = delete;
};

// True while a ScopedAllocatorHook is installed.
bool AllocatorHooked();
// Changes whenever a hook is installed or removed.
uint64_t AllocatorGeneration();

// std::allocator replacement over AlignedAllocate. A block is freed by
// whoever allocated it (the default allocator or a hook, which therefore
// must live as long as its blocks: tests keep theirs in a static).
template <class T>
struct Aligned64Allocator {
  using value_type = T;
  Aligned64Allocator() = default;
  template <class U>
  Aligned64Allocator(const Aligned64Allocator<U>&) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    return static_cast<T*>(AlignedAllocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, size_t n) { AlignedFree(p, n * sizeof(T)); }
  bool operator==(const Aligned64Allocator&) const { return true; }
  bool operator!=(const Aligned64Allocator&) const { return false; }
};
template <class T>
using AlignedVector = std::vector<T, Aligned64Allocator<T>>;

// Aligned64Allocator whose resize() leaves trivially constructible
// elements unwritten, for buffers that a parallel pass then fills
// completely (the packed weights): each page is first written by the
// thread that fills it, and so placed on its NUMA node, instead of by a
// zero fill on the calling thread. Memory the allocator takes fresh from
// the OS is untouched until then; a block it reuses stays where it was.
template <class T>
struct FirstTouchAllocator : Aligned64Allocator<T> {
  template <class U>
  struct rebind {
    using other = FirstTouchAllocator<U>;
  };
  FirstTouchAllocator() = default;
  template <class U>
  FirstTouchAllocator(const FirstTouchAllocator<U>&) {}  // NOLINT: rebinding
  template <class U>
  void construct(U* p) noexcept(
      std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;  // default-initialised: no write
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
template <class T>
using FirstTouchVector = std::vector<T, FirstTouchAllocator<T>>;

// Per-thread scratch reused across calls: returns `buf` grown to hold at
// least `n` elements. Under a hook it is reallocated to exactly `n` (and
// whenever the hook changed), so an access past element n - 1 faults.
template <class T>
T* ScratchFor(AlignedVector<T>* buf, uint64_t* generation, size_t n) {
  const uint64_t now = AllocatorGeneration();
  const bool exact = AllocatorHooked();
  if (buf->size() < n || *generation != now || (exact && buf->size() != n)) {
    AlignedVector<T>().swap(*buf);  // free first: peak memory is one buffer
    buf->resize(n);
    *generation = now;
  }
  return buf->data();
}

}  // namespace w4jit::internal

#endif  // W4JIT_BASE_MEMORY_H_
