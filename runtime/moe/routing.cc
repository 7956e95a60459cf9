#include "runtime/moe/routing.h"

#include <cmath>

#include "absl/strings/str_format.h"

namespace w4jit::internal {

absl::Status ValidateRouting(int64_t t, int64_t k, int64_t experts,
                             const int32_t* ids, const float* weights) {
  for (int64_t s = 0; s < t * k; ++s) {
    if (ids[s] < 0 || ids[s] >= experts) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "topk_ids[%d, %d] = %d is not an expert id in [0, %d)", s / k, s % k,
          ids[s], experts));
    }
    if (weights != nullptr && !std::isfinite(weights[s])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "topk_weights[%d, %d] = %f is not finite", s / k, s % k, weights[s]));
    }
  }
  return absl::OkStatus();
}

void MarkBadRouting(int64_t t, int64_t k, int64_t experts, const int32_t* ids,
                    const float* weights, std::vector<uint8_t>* skip) {
  skip->assign(static_cast<size_t>(t), 0);
  for (int64_t s = 0; s < t * k; ++s) {
    const bool bad_id = ids[s] < 0 || ids[s] >= experts;
    const bool bad_weight = weights != nullptr && !std::isfinite(weights[s]);
    if (bad_id || bad_weight) (*skip)[s / k] = 1;
  }
}

Routing GroupByExpert(int64_t t, int64_t k, int64_t experts, const int32_t* ids,
                      const uint8_t* skip) {
  const int64_t slots = t * k;
  auto used = [&](int64_t s) { return skip == nullptr || skip[s / k] == 0; };
  Routing r;
  r.offset.assign(static_cast<size_t>(experts + 1), 0);
  for (int64_t s = 0; s < slots; ++s) {
    if (used(s)) ++r.offset[ids[s] + 1];
  }
  for (int64_t e = 0; e < experts; ++e) r.offset[e + 1] += r.offset[e];
  std::vector<int64_t> next(r.offset.begin(), r.offset.end() - 1);
  r.slot_at.resize(static_cast<size_t>(r.offset[experts]));
  r.pos_of.assign(static_cast<size_t>(slots), -1);
  for (int64_t s = 0; s < slots; ++s) {
    if (!used(s)) continue;
    const int64_t p = next[ids[s]]++;
    r.slot_at[p] = s;
    r.pos_of[s] = p;
  }
  return r;
}

}  // namespace w4jit::internal
