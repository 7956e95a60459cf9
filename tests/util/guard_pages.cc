#include "tests/util/guard_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <new>

namespace w4jit::testing {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

}  // namespace

const char* ToString(Flush f) {
  return f == Flush::kFront ? "flush-front" : "flush-back";
}

GuardedBuffer::GuardedBuffer(size_t bytes, Flush flush, size_t align)
    : bytes_(bytes) {
  const size_t page = PageSize();
  const size_t data_pages = bytes == 0 ? 1 : (bytes + page - 1) / page;
  mapped_ = (data_pages + 2) * page;
  base_ = mmap(nullptr, mapped_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base_ == MAP_FAILED) {
    base_ = nullptr;
    throw std::bad_alloc();
  }
  char* first = static_cast<char*>(base_) + page;
  if (mprotect(first, data_pages * page, PROT_READ | PROT_WRITE) != 0) {
    munmap(base_, mapped_);
    throw std::bad_alloc();
  }
  if (flush == Flush::kFront) {
    data_ = first;
  } else {
    const uintptr_t end =
        reinterpret_cast<uintptr_t>(first + data_pages * page);
    data_ = reinterpret_cast<void*>((end - bytes) & ~(uintptr_t{align} - 1));
  }
}

GuardedBuffer::~GuardedBuffer() {
  if (base_ != nullptr) munmap(base_, mapped_);
}

GuardPageAllocator& GuardPageAllocator::Instance() {
  static GuardPageAllocator* instance = new GuardPageAllocator;
  return *instance;
}

void GuardPageAllocator::set_flush(Flush f) {
  std::lock_guard<std::mutex> lock(mu_);
  flush_ = f;
}

int64_t GuardPageAllocator::allocations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return allocations_;
}

void* GuardPageAllocator::Allocate(size_t bytes, size_t align) {
  std::lock_guard<std::mutex> lock(mu_);
  GuardedBuffer* b = nullptr;
  try {
    b = new GuardedBuffer(bytes, flush_, align);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  ++allocations_;
  live_[b->data()] = b;
  return b->data();
}

void GuardPageAllocator::Free(void* p, size_t) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(p);
  if (it == live_.end()) std::abort();  // not ours: a bug in the hook
  delete it->second;
  live_.erase(it);
}

}  // namespace w4jit::testing
