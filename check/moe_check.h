// Random MoE checkpoints in any format (per-expert tensors or stacked
// [E, ...] buffers) and a float64 oracle for MoeLayer::Run with an error
// bound propagated through both projections, shared by the tests and
// `w4jit bench moe`.
#ifndef W4JIT_CHECK_MOE_CHECK_H_
#define W4JIT_CHECK_MOE_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "runtime/formats/import.h"
#include "w4jit/moe.hpp"

namespace w4jit::check {

struct MoeCheckpoint {
  // Per expert, as the oracle reads them.
  std::vector<internal::CanonicalWeights> w13, w2;
  // Per expert in the checkpoint format.
  std::vector<internal::OwnedCheckpoint> w13_files, w2_files;
  // The same tensors stacked: expert e's bytes at e * stride.
  internal::OwnedCheckpoint w13_stacked, w2_stacked;
  ExpertStrides w13_strides, w2_strides;

  MoeWeights PerExpert() const;
  MoeWeights Stacked() const;
};

// Random weights (check::RandomWeights for each expert's projections)
// written in `format`.
absl::StatusOr<MoeCheckpoint> RandomMoeCheckpoint(const MoeDesc& desc,
                                                  WeightFormat format,
                                                  uint32_t seed);

// The layer's result for each y[i, c] (f64) and how far a correct run may
// be from it: f32 rounding of every sum (1e-5 of its terms' magnitude),
// DA8W4's activation quantization (half a step per element of x and of
// the intermediate), the gate's slope and its vector-form error, and one
// bf16 ulp for bf16 y. y_before (out_dtype, rows ldy apart) is added with
// accumulate; weights null means unweighted.
struct MoeExpected {
  std::vector<double> value;  // [t, H]
  std::vector<double> tol;    // [t, H]
};
MoeExpected MoeOracle(const MoeDesc& desc, const MoeCheckpoint& ckpt, int64_t t,
                      const void* x, int64_t ldx, const int32_t* ids,
                      const float* weights, int64_t k, const void* y_before,
                      int64_t ldy, bool accumulate);

// "" if every y[i, c < H] is within the bound, else the first mismatches.
std::string CompareMoe(const MoeDesc& desc, const MoeExpected& want, int64_t t,
                       const void* y, int64_t ldy);

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_MOE_CHECK_H_
