#include "runtime/formats/act_order.h"

#include <algorithm>
#include <limits>
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

absl::Status CheckShardGroupIndex(const int32_t* g_idx, int64_t k,
                                  int64_t scale_groups) {
  for (int64_t i = 0; i < k; ++i) {
    if (g_idx[i] < 0 || g_idx[i] >= scale_groups) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "g_idx[%d] = %d is not a group of the scales, which hold %d groups "
          "(0..%d)",
          i, g_idx[i], scale_groups, scale_groups - 1));
    }
  }
  return absl::OkStatus();
}

absl::Status RegroupShard(const int32_t* g_idx, int64_t group_size,
                          int64_t group_bytes, CanonicalWeights* w) {
  if (w->float_zero()) {
    return absl::InvalidArgumentError(
        "a K-shard of an act-order checkpoint (scales with more groups than "
        "K / group_size) cannot have float zero points: w4jit pads each "
        "group with zero weights, which (u - 8) * s + zf cannot express; use "
        "integer zero points");
  }
  const int64_t k = w->k;
  const int64_t src_groups = w->groups;
  std::vector<int64_t> members(static_cast<size_t>(src_groups), 0);
  for (int64_t i = 0; i < k; ++i) ++members[g_idx[i]];

  // Columns after padding every populated group to a multiple of `sub`.
  auto padded_k = [&](int64_t sub) {
    int64_t total = 0;
    for (int64_t m : members) total += (m + sub - 1) / sub * sub;
    return total;
  };
  // The sub-group size: a divisor of group_size, a multiple of 16 where one
  // exists (what every kernel family takes), streaming the fewest bytes
  // per output channel: K' / 2 nibbles plus group_bytes per group.
  int64_t sub = 0;
  double best = std::numeric_limits<double>::infinity();
  for (int pass = 0; pass < 2 && sub == 0; ++pass) {
    for (int64_t d = group_size; d >= 1; --d) {
      if (group_size % d != 0 || (pass == 0 && d % 16 != 0)) continue;
      const int64_t kp = padded_k(d);
      const double bytes = 0.5 * static_cast<double>(kp) +
                           static_cast<double>(group_bytes * (kp / d));
      if (bytes < best) {
        best = bytes;
        sub = d;
      }
    }
  }
  const int64_t kp = padded_k(sub);
  const int64_t groups = kp / sub;

  // Column j of the result reads channel perm[j] in source group src[j / sub].
  std::vector<int32_t> perm(static_cast<size_t>(kp));
  std::vector<bool> pad(static_cast<size_t>(kp), false);
  std::vector<int64_t> src(static_cast<size_t>(groups));
  std::vector<int64_t> first(static_cast<size_t>(src_groups), 0);
  int64_t col = 0;
  for (int64_t g = 0; g < src_groups; ++g) {
    first[g] = col;
    const int64_t span = (members[g] + sub - 1) / sub * sub;
    for (int64_t j = 0; j < span; j += sub) src[(col + j) / sub] = g;
    col += span;
  }
  std::vector<int64_t> next = first;
  for (int64_t i = 0; i < k; ++i) {
    perm[next[g_idx[i]]++] = static_cast<int32_t>(i);
  }
  for (int64_t g = 0; g < src_groups; ++g) {
    const int64_t span = (members[g] + sub - 1) / sub * sub;
    for (int64_t j = next[g]; j < first[g] + span; ++j) {
      perm[j] = perm[first[g]];  // a member of g: its maxima stay the same
      pad[j] = true;
    }
  }

  CanonicalWeights out;
  out.n = w->n;
  out.k = kp;
  out.group_size = sub;
  out.groups = groups;
  out.asymmetric = w->asymmetric;
  out.bias = std::move(w->bias);
  out.u.resize(static_cast<size_t>(w->n * kp));
  out.scales.resize(static_cast<size_t>(w->n * groups));
  out.zeros.resize(static_cast<size_t>(w->n * groups));
  for (int64_t n = 0; n < w->n; ++n) {
    for (int64_t j = 0; j < groups; ++j) {
      out.scales[n * groups + j] = w->S(n, src[j]);
      out.zeros[n * groups + j] = w->Z(n, src[j]);
    }
    for (int64_t j = 0; j < kp; ++j) {
      out.u[n * kp + j] = pad[j] ? w->Z(n, src[j / sub]) : w->U(n, perm[j]);
    }
  }
  out.k_perm = std::move(perm);
  *w = std::move(out);
  return absl::OkStatus();
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
