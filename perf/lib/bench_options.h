// What each `w4jit bench` job runs: one options struct per job
// (`w4jit bench layers|scaling|accuracy|model|moe`), each with its own
// defaults, all on the options every job shares. bench_args.h parses them.
#ifndef W4JIT_PERF_LIB_BENCH_OPTIONS_H_
#define W4JIT_PERF_LIB_BENCH_OPTIONS_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "perf/lib/ceilings/roofline.h"
#include "perf/lib/timing/timing.h"
#include "perf/model_presets.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// The options of every job: threads, modes, weights, timing, output.
struct BenchCommon {
  int threads = 0;  // 0: every core this process may use
  std::vector<Mode> modes = {Mode::kW4A16, Mode::kDA8W4};
  WeightType weight_type = WeightType::kS4;
  TimingOptions timing;
  RooflineOptions roofline;
  std::string out_dir = "w4jit-bench-out";
  bool quick = false;  // --quick: fewer samples (and fewer M, per job)
};

// A job over single layers: a preset's (--preset) or --shape ones.
struct LayerSetOptions : BenchCommon {
  std::string preset = "llama3-8b";  // or "custom" for --shape
  std::vector<LayerShape> layers = FindPreset("llama3-8b")->layers;
};

// `w4jit bench layers`: every layer at every M, the w4jit modes hot (and
// cold at decode M) and the oneDNN peers, against the measured roofline.
struct LayersOptions : LayerSetOptions {
  // Decode (1 .. 64) and prefill (256 .. 4096) rows. Above M = 1024 a
  // contestant whose one call would exceed the per-figure budget
  // (extrapolated from its smaller M) is not timed.
  std::vector<int64_t> ms = {1, 4, 16, 64, 256, 1024, 4096};
  bool peers = true;  // time oneDNN bf16 and u8s8 alongside
  // Cold-cache rows (weights rotated through copies exceeding the LLC)
  // for M up to this; 0 disables them.
  int64_t cold_max_m = 16;
  // A layer on the reference path is timed only up to this many
  // multiply-accumulates per call (it runs at ~1 GMAC/s); 0: no limit.
  double reference_max_macs = 1 << 30;
  // --act-order: also every layer at every M, plain versus GPTQ act-order
  // (perf/lib/sections/act_order_bench.h).
  bool act_order = false;
};

// `w4jit bench scaling`: one layer at M = 1 and 256 on 1..T threads, each
// threading backend (perf/lib/sections/scaling_bench.h).
struct ScalingOptions : LayerSetOptions {
  std::string layer;  // its name; "": ScalingLayer's default
};

// `w4jit bench accuracy`: every layer, W4A16 and DA8W4 per token and per
// group, error on activations with outlier channels beside the speed at
// every M (perf/lib/sections/accuracy_bench.h).
struct AccuracyOptions : LayerSetOptions {
  std::vector<int64_t> ms = {1, 4, 16, 64, 256, 1024, 4096};
  int outliers = 8;             // outlier channels of K
  float outlier_scale = 50.0f;  // their magnitude over the others'
  int accuracy_rows = 16;       // rows of x the error is measured on
};

// `w4jit bench model`: every linear layer of a whole model, timed step by
// step from DRAM (perf/lib/sections/model_bench.h). A MoE model
// (MoeModelPresets()) has its attention projections as linears and a fused
// MoE layer per decoder layer.
struct ModelOptions : BenchCommon {
  std::string model;  // a FindModelPreset name
  // Decode M (a MoE model's tokens T) per step: 1, 4, 8, 16 for a dense
  // model and 1, 4, 16, 64 for a MoE one unless --m says otherwise.
  std::vector<int64_t> ms;
  int model_layers = 0;  // decoder layers built; 0: all the preset has
  // --routing: a MoE model's per-step routing, drawn from a seeded
  // distribution: uniform, or skewed (expert 0 in every token).
  bool model_skewed = false;
  // --parts: a MoE model's step also timed in its two parts, the
  // attention linears alone and the MoE layers alone (same copy, same
  // routing), interleaved with the whole steps.
  bool model_parts = false;
  // --group-size: every layer's quantization group instead of the
  // preset's (-1: per-channel; 0: the preset's), as checkpoints differ.
  int64_t model_group_size = 0;
  std::vector<int64_t> prefill_ms;
  int model_steps = 10;  // timed steps per mode and M (after 2 warm-up)
  // Which epilogue variants: "plain" (the linears alone) and "fused" (the
  // epilogues a host fuses: gate_up silu_mul, o_proj and down + residual).
  std::vector<std::string> model_variants = {"plain", "fused"};
  // --prefetch: one copy of the model per software prefetch distance
  // (bytes; the kernels' prefetch_distance tuning parameter), timed
  // interleaved. Empty: the defaults (and any tuning file) only.
  std::vector<int64_t> model_prefetch;
  // --tunings: one copy of the model per tuning file (W4JIT_TUNING_FILE's
  // format; "default" for none), timed interleaved.
  std::vector<std::string> model_tunings;
  // --hugepages: a copy with LayerOptions::huge_pages off and/or on.
  std::vector<bool> model_huge_pages = {false};
};

// `w4jit bench moe`: a fused MoE layer per model, mode, routing and token
// count (perf/lib/sections/moe_bench.h).
struct MoeOptions : BenchCommon {
  std::vector<std::string> presets = {"qwen3-30b-a3b"};  // MoePresets names
  std::vector<int64_t> tokens = {1, 4, 16, 64, 256};
};

// One job of a `w4jit bench` run.
using BenchJob = std::variant<LayersOptions, ScalingOptions, AccuracyOptions,
                              ModelOptions, MoeOptions>;

// The options every job has.
const BenchCommon& Common(const BenchJob& job);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_OPTIONS_H_
