#include "torch/aten_parallel_backend.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <memory>

namespace w4jit::torch_ext {

int AtenParallelBackend::concurrency() const {
  if (at::in_parallel_region()) return 1;
  return std::max(1, at::get_num_threads());
}

void AtenParallelBackend::Run(int num_chunks,
                              const std::function<void(int chunk)>& fn) {
  if (num_chunks <= 0) return;
  const int workers = std::min(num_chunks, concurrency());
  if (workers <= 1) {
    for (int c = 0; c < num_chunks; ++c) fn(c);
    return;
  }
  std::atomic<int> next{0};
  // One index per worker (grain 1), each worker drains the shared counter.
  at::parallel_for(0, workers, 1, [&](int64_t begin, int64_t end) {
    if (begin >= end) return;
    for (int c = next.fetch_add(1); c < num_chunks; c = next.fetch_add(1)) {
      fn(c);
    }
  });
}

void InstallAtenParallelBackend() {
  static const bool installed = [] {
    SetParallelBackend(std::make_shared<AtenParallelBackend>());
    return true;
  }();
  (void)installed;
}

}  // namespace w4jit::torch_ext
