// The reference implementation: portable C++ without intrinsics that
// computes exactly what docs/numerics.md defines. It is the oracle
// of every test and the last-resort path on any x86-64 CPU. Clarity over
// speed.
#ifndef W4JIT_RUNTIME_REFERENCE_H_
#define W4JIT_RUNTIME_REFERENCE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// One row of x quantized for DA8W4.
struct QuantizedRow {
  float scale = 0.0f;               // per token: sa = max(amax, 1e-10) / 127;
                                    // NaN if the row holds NaN or Inf.
                                    // Per group: 1 (unused)
  std::vector<int8_t> qa;           // [K]; all 0 for a non-finite row
  std::vector<int32_t> group_sums;  // [G]: sum of qa over each group
  // Per group only, else empty: [G] sa[g] = max(amax_g, 1e-10) / 127 over
  // the group's entries; NaN for a group with NaN or Inf, whose qa and sum
  // are then 0.
  std::vector<float> group_scales;
};

// DA8W4 quantization of x[0..K) (dtype act_dtype): division by the scale,
// round-half-even, clamp to [-127, 127]. One scale per row, or with
// per_group one per group of group_size entries (-1: K).
QuantizedRow QuantizeRowRef(const void* x, DType act_dtype, int64_t k,
                            int64_t group_size, bool per_group = false);

// Exact integer part of DA8W4 for one row and column:
// acc[g] = sum_{k in g} qa[k] * (u[n,k] - z[g,n]).
void Da8w4GroupAccRef(const CanonicalWeights& w, const QuantizedRow& row,
                      int64_t n, int32_t* acc /* [G] */);

// y[m, n] in f32 (before the output dtype), DA8W4 (either scale choice).
float Da8w4OutputRef(const CanonicalWeights& w, const QuantizedRow& row,
                     int64_t n);
// x_row is act_dtype; computed in f32 (bf16 x is widened exactly).
// `numerics` as LayerDesc::numerics (reference.cc says what each sums).
float W4a16OutputRef(const CanonicalWeights& w, const void* x_row,
                     DType act_dtype, int64_t n,
                     Numerics numerics = Numerics::kExact);

// x_row (act_dtype) as the kernels see it under act-order: element j is
// x_row[k_perm[j]] (copied into *storage). With an empty k_perm, x_row.
const void* ActOrderRow(const void* x_row, DType act_dtype,
                        const std::vector<int32_t>& k_perm,
                        std::vector<uint8_t>* storage);

// Whole-layer reference (reads x through w.k_perm): y = layer(x) in
// desc.out_dtype.
void RunReference(const LayerDesc& desc, const CanonicalWeights& w,
                  const RunArgs& args);

// The reference as a LinearKernel (owns its weights), named
// "reference_w4a16" or "reference_da8w4" plus an optional reason suffix,
// e.g. "reference_da8w4 (group 6 is not a multiple of 4)".
std::unique_ptr<LinearKernel> MakeReferenceKernel(const LayerDesc& desc,
                                                  CanonicalWeights w,
                                                  std::string reason = "");

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_REFERENCE_H_
