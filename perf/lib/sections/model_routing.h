// A MoE model's routing in `w4jit bench model`: every step draws a fresh
// routing for every decoder layer, and a row reports the mean distinct
// experts its timed steps touched.
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_ROUTING_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_ROUTING_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "perf/model_presets.h"

namespace w4jit::perf {

// One step's routing of a MoE model, every decoder layer's: layer l's
// [T, k] expert ids and weights start at l * T * k; distinct[l] is the
// number of distinct experts layer l's tokens touch.
struct StepRoutingDraw {
  std::vector<int32_t> ids;
  std::vector<float> weights;
  std::vector<int64_t> distinct;
  int64_t total() const;  // the sum of distinct
};

// The distinct values among ids[0, n).
int64_t DistinctExperts(const int32_t* ids, int64_t n);

// `draws` steps' routings of `layers` decoder layers at T = t tokens:
// MoeRouting (uniform or skewed) seeded per step and layer from `seed`,
// and positive weights summing to 1 per token.
std::vector<StepRoutingDraw> DrawModelRouting(const MoePreset& moe, int layers,
                                              int64_t t, bool skewed, int draws,
                                              uint32_t seed);

// The mean distinct experts per step over the timed steps of a contender
// that made the calls per_call (in order) and reported `samples` timed
// ones: the calls after TimeInterleaved's two warm-ups where that is all
// it ran (*exact true), else the mean of every call (*exact false).
double MeanTimedExperts(const std::vector<int64_t>& per_call, int samples,
                        bool* exact);

// The routings a (copy, T) contender cycles through, one per call, and
// the distinct experts of each call it made, in order.
struct RoutingPool {
  std::vector<StepRoutingDraw> draws;
  mutable size_t next = 0;
  mutable std::vector<int64_t> used;
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_ROUTING_H_
