// The --model section of `w4jit bench`: every linear layer of a whole
// model (a preset's shapes times its decoder layers, random int4 weights
// from a seed), timed one step at a time through all layers in order, at
// decode and prefill M, in both modes, with and without the epilogues a
// host fuses. A model's weights are far beyond any L3, so a decode step
// streams them from DRAM: the section times a plain streaming read of a
// DRAM-sized buffer in the same rounds (the rate drifts on a shared
// machine) and reports each step's weight bytes/s against it.
//
// A MoE model (MoeModelPresets()) runs, per decoder layer, its attention
// projections (qkv, o_proj) as linears, then one fused MoE layer
// (MoeLayer) routed by a fresh draw every step and layer (the router's
// matmul is not run); its rows count the bytes of the attention and of
// the distinct experts the step's routing touched, and the MACs against
// the mode's compute peak, also timed in the same rounds.
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_BENCH_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_BENCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "perf/lib/bench_config.h"
#include "perf/lib/report/bench_report.h"
#include "perf/lib/timing/timing.h"
#include "perf/model_presets.h"
#include "w4jit/moe.hpp"

namespace w4jit::perf {

// Bytes a layer of `shape` holds once packed, for either mode (an upper
// bound: int4 weights, f32 scales and one f32 per group for zero points or
// the DA8W4 weight sums, f32 bias).
int64_t EstimatePackedBytes(const LayerShape& shape, WeightType weight_type);

// An expert's two projections as linear shapes: w13 (2I x H) and w2
// (H x I), with the preset's group and biases.
std::vector<LayerShape> MoeExpertShapes(const MoePreset& p);

// What the --model section holds at once: every copy of the model (per
// mode and --prefetch distance)
// in one epilogue variant (a MoE model's: its attention linears and all
// its experts), the read probe's buffer, and the import scratch of the
// largest layer (a MoE model's: the random checkpoint of its experts).
struct ModelMemory {
  int64_t per_layer_bytes = 0;  // one decoder layer, all copies
  int64_t packed_bytes = 0;     // per_layer_bytes * layers
  int64_t read_buffer_bytes = 0;
  int64_t scratch_bytes = 0;
  // Copies of the model built (modes x prefetch / tuning settings x page
  // sizes): packed_bytes / copies is one copy's bound.
  int64_t copies = 1;
  int64_t total() const {
    return packed_bytes + read_buffer_bytes + scratch_bytes;
  }
};
ModelMemory EstimateModelMemory(const BenchConfig& config,
                                const ModelPreset& model,
                                int64_t read_buffer_bytes);

// MemAvailable of a /proc/meminfo text, in bytes.
absl::StatusOr<int64_t> ParseMemAvailable(absl::string_view meminfo);
// The same from this machine's /proc/meminfo.
absl::StatusOr<int64_t> MemAvailableBytes();

// OK if `need` fits in `available` bytes; else RESOURCE_EXHAUSTED naming
// both, and how many layers (--layers) would fit.
absl::Status CheckModelMemory(const BenchConfig& config,
                              const ModelMemory& need, int64_t available);

// The read probe's buffer: 8x the L3, at least 1 GiB.
int64_t ModelReadBufferBytes();

// Fills a row's figures from its step timings and the read probe's timed
// in the same rounds (read_bytes per probe call).
void FillModelRowFigures(const TimingResult& step, const TimingResult& read,
                         double read_bytes, ModelRow* row);

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

// A MoE row's compute-peak figures (after FillModelRowFigures): the peak
// loop timed in the same rounds doing peak_macs per run, row->macs per
// step, and the bound that binds.
void FillModelRowPeak(const TimingResult& peak, double peak_macs,
                      ModelRow* row);

// Appends report->model_rows (and model_layers) for config.model. `say`
// gets lines for the log; `status_line`, if set, a line that the next one
// replaces (packing progress, for a terminal). RESOURCE_EXHAUSTED when the
// model does not fit in MemAvailable.
absl::Status RunModelBench(
    const BenchConfig& config,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report);

// The same for `model` (config.model is not read): a test's own preset.
// config.model_layers must be in [1, model.num_layers].
absl::Status RunModelBenchOn(
    const BenchConfig& config, const ModelPreset& model,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_BENCH_H_
