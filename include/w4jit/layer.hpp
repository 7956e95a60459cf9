// A prepared int4 linear layer: weights are imported and repacked once at
// creation; Run() may then be called from any thread, concurrently.
#ifndef W4JIT_LAYER_HPP_
#define W4JIT_LAYER_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "w4jit/types.hpp"

namespace w4jit {

namespace internal {
class LinearKernel;
}  // namespace internal

// Per-layer creation options.
// The numerics W4JIT_NUMERICS asks for (w4jit/types.hpp, Numerics):
// kZentorch for "zentorch", kExact when unset, empty or "exact"; any other
// value is an error naming it. Read on every call, so a process may set it
// before it builds layers. Layer::Create does not consult it (a LayerDesc
// says what it computes); callers that want the process-wide switch (the
// torch ops, w4jit.Linear) fill LayerDesc::numerics from it.
absl::StatusOr<Numerics> NumericsFromEnvironment();

struct LayerOptions {
  // Use the portable reference path even if a JIT kernel could run.
  bool force_reference = false;
  // Ask for 2 MB pages (madvise(MADV_HUGEPAGE)) for the packed weights
  // and other buffers of 2 MB or more; W4JIT_HUGEPAGES=1 does so for every
  // layer. Whether the OS grants them: `w4jit info`. Results are the same.
  bool huge_pages = false;
};

// The run-time operands of the layer's binary post-ops (Epilogue): data[i]
// is [M, N_out] in desc().epilogue.binary[i].dtype with rows ld[i] >= N_out
// elements apart. An operand may be y itself (same dtype and ld: an
// in-place residual add); it is read before y is written.
struct EpilogueInputs {
  const void* data[2] = {nullptr, nullptr};
  int64_t ld[2] = {0, 0};
};

// Per-call switches of Layer::Run.
struct LayerRunOptions {
  // This call's NonFinitePolicy (w4jit/types.hpp) in place of
  // desc().non_finite: kError checks x (one read of it) and returns
  // INVALID_ARGUMENT naming the first NaN / Inf, "x[i, j] = nan", writing
  // nothing; kPropagate runs, and a row of x holding NaN or Inf gives a
  // non-finite row of y (docs/numerics.md), other rows unaffected.
  std::optional<NonFinitePolicy> non_finite;
};

class Layer {
 public:
  // Validates `desc` and `weights`, imports the weights and packs them for
  // the kernel chosen for this CPU. Errors name the offending value; when
  // memory (or a JIT code buffer) cannot be had, RESOURCE_EXHAUSTED names
  // the bytes wanted and nothing is left allocated.
  static absl::StatusOr<std::unique_ptr<Layer>> Create(
      const LayerDesc& desc, const WeightsView& weights,
      const LayerOptions& options = {});

  ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // y[m, :] = x[m, :] * W^T (+ bias) for m in [0, M). x rows are `ldx`
  // elements apart (ldx >= K) in desc().act_dtype; y rows are `ldy`
  // elements apart (ldy >= N) in desc().out_dtype. Only y[m, 0..N) is
  // written. M = 0 is an empty batch: it succeeds without reading x or
  // writing y, which may then be null. M < 0 is an error.
  // RESOURCE_EXHAUSTED if its scratch cannot be allocated. NaN / Inf in x:
  // desc().non_finite (LayerRunOptions).
  absl::Status Run(int64_t m, const void* x, int64_t ldx, void* y,
                   int64_t ldy) const;
  // The same for a layer whose epilogue has binary post-ops: `inputs`
  // holds their operands (entries past num_binary must be null). y has
  // N_out = desc().out_n() columns (N / 2 with silu_mul): ldy >= N_out and
  // only y[m, 0..N_out) is written. A layer without binary post-ops takes
  // EpilogueInputs{} (to pass `options`).
  absl::Status Run(int64_t m, const void* x, int64_t ldx, void* y, int64_t ldy,
                   const EpilogueInputs& inputs,
                   const LayerRunOptions& options = {}) const;

  const LayerDesc& desc() const { return desc_; }
  // Bytes of packed weights, scales, zero points and bias this layer holds.
  size_t packed_bytes() const;
  // Names of the kernels this layer runs, e.g.
  // "da8w4_s4_g128_n4096_k4096_m4x32__avx512vnni" or "reference_da8w4".
  std::vector<std::string> kernel_names() const;
  // What Run(m, ...) computes with (m >= 1; m < 1 answers for 1): the
  // instruction of the kernels that run at that M, which can change with M
  // (W4A16 and DA8W4 hand large M to the AMX tiles where the CPU has
  // them). {ComputeOp::kScalar, 0} on the reference path.
  LayerCompute compute_at(int64_t m) const;

 private:
  Layer(const LayerDesc& desc, std::unique_ptr<internal::LinearKernel> k);
  static absl::StatusOr<std::unique_ptr<Layer>> CreateValidated(
      const LayerDesc& desc, const WeightsView& weights,
      const LayerOptions& options);
  LayerDesc desc_;
  std::unique_ptr<internal::LinearKernel> kernel_;
};

}  // namespace w4jit

#endif  // W4JIT_LAYER_HPP_
