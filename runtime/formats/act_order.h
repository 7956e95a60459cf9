// GPTQ act-order (desc_act): a checkpoint's g_idx[k] names the group of
// input channel k in any order. Kernels want each group's members to be
// contiguous, so the importer permutes K once at creation (the columns of
// u; scales and zero points stay per group) and records the permutation in
// CanonicalWeights::k_perm, through which the kernels then read x.
#ifndef W4JIT_RUNTIME_FORMATS_ACT_ORDER_H_
#define W4JIT_RUNTIME_FORMATS_ACT_ORDER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// The permutation that makes the groups of `g_idx` ([desc.k] entries)
// contiguous: entry j is the input channel placed at column j, group by
// group, each group's channels in increasing order. Empty if g_idx is
// already k / group_size (no permutation needed). Refuses an entry outside
// [0, G) (naming the row k) and groups that do not have exactly group_size
// members (naming the first such group and its count).
absl::StatusOr<std::vector<int32_t>> ActOrderPermutation(const LayerDesc& desc,
                                                         const int32_t* g_idx);

// w->u in checkpoint order (column k = input channel k) becomes column
// j = input channel perm[j]; w->k_perm = perm. No-op for an empty perm.
void ApplyActOrder(std::vector<int32_t> perm, CanonicalWeights* w);

// The inverse, for exporters: `w` with u back in checkpoint order and
// k_perm cleared, and the g_idx that describes it (g_idx[k_perm[j]] =
// j / group_size). Requires a non-empty, valid w.k_perm.
CanonicalWeights UndoActOrder(const CanonicalWeights& w,
                              std::vector<int32_t>* g_idx);

// OK if w.k_perm is empty or a permutation of [0, K).
absl::Status CheckActOrder(const CanonicalWeights& w);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_FORMATS_ACT_ORDER_H_
