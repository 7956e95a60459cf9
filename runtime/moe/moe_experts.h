// The experts of a MoE layer, packed as column panels of their two
// projections, and the three phases of a call:
//   1. every active expert's w13 on its gathered rows, gate and up fused
//      by the gated epilogue: h[rows, I] (f32);
//   2. every active expert's w2 on its rows of h: o[rows, H] (f32), one
//      row per (token, j) slot;
//   3. y[t] = sum_j w[t, j] * o[pos(t, j)], j in order, in parallel over
//      tokens and columns (no atomics, no serial pass).
// Phases 1 and 2 are each one parallel region over (expert, rows, panel)
// items (runtime/moe/work_items.h) in which each item runs its panel's
// kernel inline.
#ifndef W4JIT_RUNTIME_MOE_MOE_EXPERTS_H_
#define W4JIT_RUNTIME_MOE_MOE_EXPERTS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "runtime/moe/routing.h"
#include "runtime/threads/work_split.h"
#include "w4jit/moe.hpp"

namespace w4jit::internal {

// The intermediate h between the projections: bf16 where w4jit/moe.hpp
// lets it be rounded (W4A16 with bf16 x, or allow_bf16_compute), as a
// bf16 host stores it; else f32. One type on every path, so an expert's
// output does not depend on how many rows it was given (the AMX tiles
// read bf16 x; the vector kernels would keep an f32 h exact).
DType MoeIntermediateDType(const MoeDesc& d);
// The layers of one expert's projections as the kernels see them (x, then
// h in MoeIntermediateDType, the outputs of w2 in f32, the gated epilogue
// on w13).
LayerDesc MoeW13Desc(const MoeDesc& d);
LayerDesc MoeW2Desc(const MoeDesc& d);

// swigluoai's w13 (gate i in row 2i, up i in row 2i + 1) as [gate | up]
// halves: the order of a silu_mul layer (MoeW13Desc), which the panels
// slice.
CanonicalWeights SplitInterleavedRows(const CanonicalWeights& w);

class MoeExperts {
 public:
  // `desc` has passed validation. Imports every expert (errors name it).
  static absl::StatusOr<std::unique_ptr<MoeExperts>> Create(
      const MoeDesc& desc, const MoeWeights& weights, bool force_reference);

  // Arguments validated by MoeLayer (t >= 1). skip: [t] or null; a
  // token with skip[i] != 0 is not routed (its ids and weights are not
  // read) and its row of y becomes NaN (NonFinitePolicy::kPropagate).
  void Run(int64_t t, const void* x, int64_t ldx, const int32_t* ids,
           const float* weights, int64_t k, void* y, int64_t ldy,
           const MoeRunOptions& options, const uint8_t* skip) const;

  size_t packed_bytes() const;
  size_t expert_packed_bytes() const;
  std::vector<std::string> kernel_names() const;
  // Every expert's kernels are made alike: the first w13 kernel's answer.
  LayerCompute compute_at(int64_t rows) const {
    return w13_.kernels.front()->compute_at(rows);
  }

 private:
  // One projection of every expert: kernels[e * panels + p] computes
  // output columns cols[p] of expert e.
  struct Projection {
    std::vector<Range> cols;
    std::vector<int64_t> widths;
    std::vector<std::unique_ptr<LinearKernel>> kernels;
  };
  explicit MoeExperts(const MoeDesc& desc) : desc_(desc) {}
  absl::Status AddExpert(int64_t e, const MoeWeights& weights,
                         bool force_reference);
  // Runs every item of `p` over the routed rows: an item's rows of y (in
  // sorted positions, rows ldy elements of y_size bytes apart) at its
  // panel's columns, from x rows ldx elements (of x_size bytes) apart.
  // x_follows_rows false: every item reads x's first row (a single token).
  void RunPhase(const Projection& p, const Routing& routing, const char* x,
                int64_t ldx, size_t x_size, bool x_follows_rows, char* y,
                int64_t ldy, size_t y_size) const;

  // Phase 3: y[i] = sum_j w[i, j] * o[pos(i, j)] (o: [routed rows, H]),
  // NaN for the skipped tokens.
  void WeightedSum(int64_t t, int64_t k, const Routing& routing, const float* o,
                   const float* weights, void* y, int64_t ldy,
                   const MoeRunOptions& options, const uint8_t* skip) const;

  MoeDesc desc_;
  Projection w13_;
  Projection w2_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_MOE_MOE_EXPERTS_H_
