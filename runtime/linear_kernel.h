// The boundary between Layer (validation, public API) and an implementation
// of one mode for one layer: the reference, or a JIT kernel family.
#ifndef W4JIT_RUNTIME_LINEAR_KERNEL_H_
#define W4JIT_RUNTIME_LINEAR_KERNEL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "w4jit/types.hpp"

namespace w4jit::internal {

// Arguments of one Run(), already validated by Layer: m >= 1, pointers
// non-null, ldx >= K, ldy >= N. Dtypes are the layer's.
struct RunArgs {
  int64_t m;
  const void* x;
  int64_t ldx;
  void* y;
  int64_t ldy;  // >= N_out
  // Binary post-op operands (LayerDesc::epilogue), [m, N_out], validated.
  const void* ep_data[2] = {nullptr, nullptr};
  int64_t ep_ld[2] = {0, 0};
  // The caller's promise that x holds what it held at this thread's
  // previous Run (of any kernel): a kernel may then reuse what it derived
  // from x there, where x, m, ldx and the derivation are the same. Fused
  // MoE sets it within a phase, whose x no call changes, so that an
  // expert's column panels pack its rows once.
  bool x_unchanged = false;
};

class LinearKernel {
 public:
  virtual ~LinearKernel() = default;
  // Must write exactly y[i*ldy + j] for i < m, j < N_out and nothing else.
  // Runs its own threading through internal::ParallelFor.
  virtual void Run(const RunArgs& args) const = 0;
  virtual size_t packed_bytes() const = 0;
  virtual std::vector<std::string> kernel_names() const = 0;
  // What the kernels that Run(m, ...) picks multiply with (m >= 1): the
  // path choice by M is the kernel's, so is this answer.
  virtual LayerCompute compute_at(int64_t m) const = 0;
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_LINEAR_KERNEL_H_
