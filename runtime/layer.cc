#include "w4jit/layer.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/env.h"
#include "base/memory.h"
#include "runtime/formats/import.h"
#include "runtime/linear_kernel.h"
#include "runtime/make_kernel.h"
#include "runtime/non_finite.h"
#include "runtime/validate.h"

namespace w4jit {

using internal::CanonicalWeights;
using internal::LinearKernel;

absl::StatusOr<Numerics> NumericsFromEnvironment() {
  const char* v = internal::GetEnv(internal::EnvVar::kNumerics);
  if (v == nullptr || *v == '\0' || std::strcmp(v, "exact") == 0) {
    return Numerics::kExact;
  }
  if (std::strcmp(v, "zentorch") == 0) return Numerics::kZentorch;
  return absl::InvalidArgumentError(
      absl::StrFormat("W4JIT_NUMERICS = '%s' is not 'exact' or 'zentorch'", v));
}

absl::StatusOr<std::unique_ptr<Layer>> Layer::Create(
    const LayerDesc& desc, const WeightsView& weights,
    const LayerOptions& options) {
  if (absl::Status s = internal::ValidateDesc(desc); !s.ok()) return s;
  if (absl::Status s = internal::ValidateWeightsPointers(desc, weights);
      !s.ok()) {
    return s;
  }
  // Out of memory is an answer, not a crash: every buffer is owned by RAII
  // objects on this path, so unwinding frees what was allocated so far.
  try {
    internal::ScopedHugePages huge_pages(options.huge_pages);
    return CreateValidated(desc, weights, options);
  } catch (const internal::AllocationError& e) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate %d bytes for the packed weights of the layer n=%d "
        "k=%d",
        e.bytes(), desc.n, desc.k));
  } catch (const std::bad_alloc&) {
    // The canonical import: a nibble per weight plus scales and zeros.
    const int64_t ng = desc.n * desc.groups();
    return absl::ResourceExhaustedError(absl::StrFormat(
        "out of memory importing the weights of the layer n=%d k=%d (about "
        "%d bytes)",
        desc.n, desc.k, desc.n * desc.k + 5 * ng + 4 * desc.n));
  }
}

absl::StatusOr<std::unique_ptr<Layer>> Layer::CreateValidated(
    const LayerDesc& desc, const WeightsView& weights,
    const LayerOptions& options) {
  // kernel_desc differs from desc for a K-shard of an act-order checkpoint
  // (WeightsView::scale_groups): padded K, smaller groups. Run keeps
  // checking x against desc (the shard's K); the kernels read x through
  // the weights' k_perm.
  LayerDesc kernel_desc;
  absl::StatusOr<CanonicalWeights> imported =
      internal::ImportWeights(desc, weights, &kernel_desc);
  if (!imported.ok()) return imported.status();
  auto kernel = internal::MakeLinearKernel(kernel_desc, *std::move(imported),
                                           options.force_reference);
  if (!kernel.ok()) return kernel.status();
  return std::unique_ptr<Layer>(new Layer(desc, *std::move(kernel)));
}

Layer::Layer(const LayerDesc& desc, std::unique_ptr<LinearKernel> k)
    : desc_(desc), kernel_(std::move(k)) {}

Layer::~Layer() = default;

absl::Status Layer::Run(int64_t m, const void* x, int64_t ldx, void* y,
                        int64_t ldy) const {
  if (desc_.epilogue.num_binary > 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the layer's epilogue has %d binary post-op(s): pass their operands "
        "with Run(m, x, ldx, y, ldy, EpilogueInputs)",
        desc_.epilogue.num_binary));
  }
  return Run(m, x, ldx, y, ldy, EpilogueInputs{});
}

absl::Status Layer::Run(int64_t m, const void* x, int64_t ldx, void* y,
                        int64_t ldy, const EpilogueInputs& inputs,
                        const LayerRunOptions& options) const {
  if (absl::Status s = internal::ValidateRunArgs(desc_, m, x, ldx, y, ldy);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = internal::ValidateEpilogueInputs(desc_, m, inputs);
      !s.ok()) {
    return s;
  }
  const NonFinitePolicy policy = options.non_finite.value_or(desc_.non_finite);
  if (absl::Status s = internal::ValidateNonFinitePolicy(
          "LayerRunOptions::non_finite", policy);
      !s.ok()) {
    return s;
  }
  // An empty batch is a no-op (vLLM runs linear layers with zero tokens
  // while profiling); kernels are only ever given M >= 1.
  if (m == 0) return absl::OkStatus();
  // kPropagate needs nothing here: the kernels keep a non-finite row of x
  // to its own row of y (docs/numerics.md, tested per ISA path).
  if (policy == NonFinitePolicy::kError) {
    if (absl::Status s =
            internal::CheckFinite(desc_.act_dtype, m, x, ldx, desc_.k);
        !s.ok()) {
      return s;
    }
  }
  try {
    internal::RunArgs args{m, x, ldx, y, ldy};
    for (int i = 0; i < 2; ++i) {
      args.ep_data[i] = inputs.data[i];
      args.ep_ld[i] = inputs.ld[i];
    }
    kernel_->Run(args);
  } catch (const internal::AllocationError& e) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate %d bytes of scratch for M = %d", e.bytes(), m));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("out of memory running M = %d", m));
  }
  return absl::OkStatus();
}

size_t Layer::packed_bytes() const { return kernel_->packed_bytes(); }

std::vector<std::string> Layer::kernel_names() const {
  return kernel_->kernel_names();
}

LayerCompute Layer::compute_at(int64_t m) const {
  return kernel_->compute_at(std::max<int64_t>(m, 1));
}

}  // namespace w4jit
