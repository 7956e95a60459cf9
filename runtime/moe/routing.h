// Top-k routing of a MoE call: its validation, and the counting sort that
// groups the (token, j) slots by expert.
#ifndef W4JIT_RUNTIME_MOE_ROUTING_H_
#define W4JIT_RUNTIME_MOE_ROUTING_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace w4jit::internal {

// Every id in [0, experts) and (unless weights is null) every weight
// finite, for t tokens of k slots; the error names the first bad slot and
// its value.
absl::Status ValidateRouting(int64_t t, int64_t k, int64_t experts,
                             const int32_t* ids, const float* weights);

// NonFinitePolicy::kPropagate's tokens to skip: skip[i] = 1 if a slot of
// token i has an id outside [0, experts) or (unless weights is null) a
// non-finite weight, else 0. skip has t entries.
void MarkBadRouting(int64_t t, int64_t k, int64_t experts, const int32_t* ids,
                    const float* weights, std::vector<uint8_t>* skip);

// Slots s = token * k + j grouped by expert: the rows of expert e are
// sorted positions [offset[e], offset[e + 1]), position p holds slot
// slot_at[p], and slot s sits at position pos_of[s]. Within an expert the
// slots keep their order (a stable counting sort), so the grouping is a
// function of the routing alone. Slots of skipped tokens have no
// position (pos_of = -1); offset[E] counts the others.
struct Routing {
  std::vector<int64_t> offset;   // [E + 1]
  std::vector<int64_t> slot_at;  // [offset[E]]
  std::vector<int64_t> pos_of;   // [t * k]

  int64_t rows(int64_t e) const { return offset[e + 1] - offset[e]; }
};

// The ids of tokens not skipped must be in [0, experts): ValidateRouting,
// or skip from MarkBadRouting. skip: [t], nonzero for a token whose slots
// are left out; null skips none.
Routing GroupByExpert(int64_t t, int64_t k, int64_t experts, const int32_t* ids,
                      const uint8_t* skip = nullptr);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_MOE_ROUTING_H_
