#include "perf/lib/sections/model_routing.h"

#include <random>
#include <set>
#include <utility>

#include "perf/lib/sections/moe_bench.h"

namespace w4jit::perf {
int64_t StepRoutingDraw::total() const {
  int64_t sum = 0;
  for (int64_t d : distinct) sum += d;
  return sum;
}

int64_t DistinctExperts(const int32_t* ids, int64_t n) {
  return static_cast<int64_t>(std::set<int32_t>(ids, ids + n).size());
}

std::vector<StepRoutingDraw> DrawModelRouting(const MoePreset& moe, int layers,
                                              int64_t t, bool skewed, int draws,
                                              uint32_t seed) {
  std::vector<StepRoutingDraw> out;
  std::mt19937 weight_rng(seed ^ 0x9E3779B9u);
  std::uniform_real_distribution<float> unit(0.05f, 1.0f);
  for (int s = 0; s < draws; ++s) {
    StepRoutingDraw draw;
    for (int l = 0; l < layers; ++l) {
      const uint32_t layer_seed =
          seed + static_cast<uint32_t>(s) * 7919u + static_cast<uint32_t>(l);
      const std::vector<int32_t> ids =
          MoeRouting(t, moe.top_k, moe.experts, skewed, layer_seed);
      draw.distinct.push_back(
          DistinctExperts(ids.data(), static_cast<int64_t>(ids.size())));
      draw.ids.insert(draw.ids.end(), ids.begin(), ids.end());
      // Each token's weights: positive, summing to 1 (a renormalized
      // top-k softmax).
      for (int64_t i = 0; i < t; ++i) {
        float sum = 0.0f;
        const size_t at = draw.weights.size();
        for (int64_t j = 0; j < moe.top_k; ++j) {
          draw.weights.push_back(unit(weight_rng));
          sum += draw.weights.back();
        }
        for (int64_t j = 0; j < moe.top_k; ++j) draw.weights[at + j] /= sum;
      }
    }
    out.push_back(std::move(draw));
  }
  return out;
}

double MeanTimedExperts(const std::vector<int64_t>& per_call, int samples,
                        bool* exact) {
  // TimeInterleaved makes two untimed warm-up calls, then (for a step of
  // 5 ms or more) only timed ones: then the timed steps are the calls
  // after the first two. Else untimed calls interleave with the timed
  // ones, drawn from the same distribution: the mean of every call.
  size_t from = 0;
  *exact = per_call.size() == static_cast<size_t>(samples) + 2;
  if (*exact) from = 2;
  if (per_call.size() <= from) return 0.0;
  double sum = 0.0;
  for (size_t i = from; i < per_call.size(); ++i) {
    sum += static_cast<double>(per_call[i]);
  }
  return sum / static_cast<double>(per_call.size() - from);
}

}  // namespace w4jit::perf
