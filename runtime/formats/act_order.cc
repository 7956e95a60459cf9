#include "runtime/formats/act_order.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace w4jit::internal {

absl::StatusOr<std::vector<int32_t>> ActOrderPermutation(const LayerDesc& desc,
                                                         const int32_t* g_idx) {
  const int64_t k = desc.k;
  const int64_t gs = desc.effective_group_size();
  const int64_t groups = desc.groups();
  std::vector<int64_t> members(static_cast<size_t>(groups), 0);
  bool identity = true;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t g = g_idx[i];
    if (g < 0 || g >= groups) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "g_idx[%d] = %d is not a group: K = %d with group_size = %d has "
          "groups 0..%d",
          i, g, k, gs, groups - 1));
    }
    ++members[g];
    identity = identity && g == i / gs;
  }
  for (int64_t g = 0; g < groups; ++g) {
    if (members[g] != gs) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "g_idx gives group %d %d members, but every group needs exactly "
          "group_size = %d (act-order permutes K so that groups are "
          "contiguous; K = %d, %d groups)",
          g, members[g], gs, k, groups));
    }
  }
  if (identity) return std::vector<int32_t>();
  // Counting sort by group; stable, so each group keeps increasing k.
  std::vector<int64_t> next(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) next[g] = g * gs;
  std::vector<int32_t> perm(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    perm[next[g_idx[i]]++] = static_cast<int32_t>(i);
  }
  return perm;
}

void ApplyActOrder(std::vector<int32_t> perm, CanonicalWeights* w) {
  if (perm.empty()) return;
  std::vector<uint8_t> u(w->u.size());
  for (int64_t n = 0; n < w->n; ++n) {
    const uint8_t* src = w->u.data() + n * w->k;
    uint8_t* dst = u.data() + n * w->k;
    for (int64_t j = 0; j < w->k; ++j) dst[j] = src[perm[j]];
  }
  w->u = std::move(u);
  w->k_perm = std::move(perm);
}

CanonicalWeights UndoActOrder(const CanonicalWeights& w,
                              std::vector<int32_t>* g_idx) {
  CanonicalWeights out = w;
  out.k_perm.clear();
  g_idx->assign(static_cast<size_t>(w.k), 0);
  for (int64_t j = 0; j < w.k; ++j) {
    const int64_t k = w.k_perm[j];
    (*g_idx)[k] = static_cast<int32_t>(j / w.group_size);
    for (int64_t n = 0; n < w.n; ++n) out.u[n * w.k + k] = w.u[n * w.k + j];
  }
  return out;
}

absl::Status CheckActOrder(const CanonicalWeights& w) {
  if (w.k_perm.empty()) return absl::OkStatus();
  if (static_cast<int64_t>(w.k_perm.size()) != w.k) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weights.k_perm has %d entries, K = %d", w.k_perm.size(), w.k));
  }
  std::vector<bool> seen(static_cast<size_t>(w.k), false);
  for (int64_t j = 0; j < w.k; ++j) {
    const int64_t k = w.k_perm[j];
    if (k < 0 || k >= w.k || seen[k]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weights.k_perm[%d] = %d is out of range or repeated (K = %d)", j, k,
          w.k));
    }
    seen[k] = true;
  }
  return absl::OkStatus();
}

}  // namespace w4jit::internal
