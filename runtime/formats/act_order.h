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

// A K-shard of an act-order checkpoint (WeightsView::scale_groups >
// desc.groups(): row-parallel tensor parallelism splits K and g_idx but
// keeps the scales whole, so the shard's g_idx names groups of the whole
// checkpoint, each populated by any number of the shard's channels).
// Refuses g_idx[k] outside [0, scale_groups), naming k and the value.
absl::Status CheckShardGroupIndex(const int32_t* g_idx, int64_t k,
                                  int64_t scale_groups);

// Turns `w`, imported with w->groups = the checkpoint's groups and w->u in
// the shard's channel order, into uniform groups for the kernels: each
// checkpoint group that has members gets ceil(members / sub) groups of
// `sub` columns, its members in increasing k, then padding columns of
// weight zero (u = the group's zero point) that read one of the group's
// members (so per-group activation maxima are unchanged). `sub` is the
// divisor of `group_size` that streams the fewest bytes (nibbles plus
// `group_bytes` per group and channel). Sets w->k (the padded K' >= the
// shard's K), group_size = sub, groups, scales, zeros and k_perm (K'
// entries, each an input channel < the shard's K; padding repeats one).
// Refuses float zero points, whose padding cannot be an exact zero.
absl::Status RegroupShard(const int32_t* g_idx, int64_t group_size,
                          int64_t group_bytes, CanonicalWeights* w);

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
