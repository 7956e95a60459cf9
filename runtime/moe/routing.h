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

// Slots s = token * k + j grouped by expert: the rows of expert e are
// sorted positions [offset[e], offset[e + 1]), position p holds slot
// slot_at[p], and slot s sits at position pos_of[s]. Within an expert the
// slots keep their order (a stable counting sort), so the grouping is a
// function of the routing alone.
struct Routing {
  std::vector<int64_t> offset;   // [E + 1]
  std::vector<int64_t> slot_at;  // [t * k]
  std::vector<int64_t> pos_of;   // [t * k]

  int64_t rows(int64_t e) const { return offset[e + 1] - offset[e]; }
};

// ids must have passed ValidateRouting.
Routing GroupByExpert(int64_t t, int64_t k, int64_t experts,
                      const int32_t* ids);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_MOE_ROUTING_H_
