// `w4jit bench model`: every linear layer of a whole
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
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"
#include "perf/lib/sections/model_memory.h"
#include "perf/lib/sections/model_routing.h"
#include "perf/lib/sections/model_row_figures.h"
#include "perf/model_presets.h"

namespace w4jit::perf {

// Appends report->model_rows (and model_layers) for config.model. `say`
// gets lines for the log; `status_line`, if set, a line that the next one
// replaces (packing progress, for a terminal). RESOURCE_EXHAUSTED when the
// model does not fit in MemAvailable.
absl::Status RunModelBench(
    const ModelOptions& config,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report);

// The same for `model` (config.model is not read): a test's own preset.
// config.model_layers must be in [1, model.num_layers].
absl::Status RunModelBenchOn(
    const ModelOptions& config, const ModelPreset& model,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_BENCH_H_