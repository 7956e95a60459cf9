// A w4jit::ParallelBackend that runs a layer's chunks on ATen's intra-op
// pool, so that inside a torch process torch.set_num_threads() governs how
// many threads w4jit uses and w4jit never starts a pool of its own.
#ifndef W4JIT_TORCH_ATEN_PARALLEL_BACKEND_H_
#define W4JIT_TORCH_ATEN_PARALLEL_BACKEND_H_

#include <functional>

#include "w4jit/parallel.hpp"

namespace w4jit::torch_ext {

class AtenParallelBackend final : public ParallelBackend {
 public:
  // at::get_num_threads(), or 1 inside an ATen parallel region: a nested
  // region runs serially in ATen anyway, so splitting finer would only
  // add work.
  int concurrency() const override;
  // Chunks are handed out dynamically (an atomic counter) to at most
  // concurrency() ATen workers, so uneven chunks still balance.
  void Run(int num_chunks, const std::function<void(int chunk)>& fn) override;
};

// Installs AtenParallelBackend as w4jit's backend (idempotent). Called when
// the extension library is loaded, before any layer runs, so w4jit's own
// pool is never created in a torch process.
void InstallAtenParallelBackend();

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_ATEN_PARALLEL_BACKEND_H_
