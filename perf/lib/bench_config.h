// What `w4jit bench` runs, and the parsing of its command line.
#ifndef W4JIT_PERF_LIB_BENCH_CONFIG_H_
#define W4JIT_PERF_LIB_BENCH_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/ceilings/roofline.h"
#include "perf/lib/timing/timing.h"
#include "perf/model_presets.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

struct BenchConfig {
  std::string preset = "llama3-8b";  // or "custom" for --shape
  std::vector<LayerShape> layers;    // the preset's, or the --shape ones
  // Decode (1 .. 64) and prefill (256 .. 4096) rows. Above M = 1024 a
  // contestant whose one call would exceed the per-figure budget
  // (extrapolated from its smaller M) is not timed: M = 4096 runs where
  // the budget allows.
  std::vector<int64_t> ms = {1, 4, 16, 64, 256, 1024, 4096};
  int threads = 0;  // 0: every core this process may use
  std::vector<Mode> modes = {Mode::kW4A16, Mode::kDA8W4};
  bool peers = true;  // time oneDNN bf16 and u8s8 alongside
  WeightType weight_type = WeightType::kS4;
  TimingOptions timing;
  RooflineOptions roofline;
  // Cold-cache rows (weights rotated through copies exceeding the LLC)
  // for M up to this; 0 disables them.
  int64_t cold_max_m = 16;
  // A layer on the reference path is timed only up to this many
  // multiply-accumulates per call (it runs at ~1 GMAC/s); 0: no limit.
  double reference_max_macs = 1 << 30;
  std::string out_dir = "w4jit-bench-out";
  // The --scaling section: one layer at M = 1 and 256 on 1..T threads,
  // each threading backend. scaling_layer names it ("": ScalingLayer's
  // default).
  bool scaling = false;
  std::string scaling_layer;
  // The --act-order section: every layer at every M, plain versus GPTQ
  // act-order (perf/lib/sections/act_order_bench.h).
  bool act_order = false;
  // --moe=<model>,...: run only the fused-MoE section
  // (perf/lib/sections/moe_bench.h) for these models, at moe_tokens (the --m
  // list when one was given).
  std::vector<std::string> moe;
  std::vector<int64_t> moe_tokens = {1, 4, 16, 64, 256};
  // The --accuracy section: every layer, W4A16 and DA8W4 per token and per
  // group, error on activations with outlier channels beside the speed at
  // every M (perf/lib/sections/accuracy_bench.h).
  bool accuracy = false;
  int outliers = 8;             // outlier channels of K
  float outlier_scale = 50.0f;  // their magnitude over the others'
  int accuracy_rows = 16;       // rows of x the error is measured on
  // The --model section (perf/lib/sections/model_bench.h): every linear layer
  // of a whole model (a preset name; "" = off), timed step by step from DRAM.
  // With it, `w4jit bench` runs only that section, at decode M = ms (1, 4,
  // 8, 16 unless --m says otherwise) and prefill M = prefill_ms.
  // A MoE model (MoeModelPresets()) has its attention projections as
  // linears and a fused MoE layer per decoder layer, decode T = ms (1, 4,
  // 16, 64 unless --m says otherwise).
  std::string model;
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
  // format; "default" for none), timed interleaved: a sweep's tuning
  // judged on whole-model decode, in one run beside the defaults.
  std::vector<std::string> model_tunings;
  // --hugepages: a copy with LayerOptions::huge_pages off and/or on
  // (default: off only, unless W4JIT_HUGEPAGES=1 is set).
  std::vector<bool> model_huge_pages = {false};
  bool quick = false;
  bool help = false;
};

// Parses the arguments after `bench` (argv[0] is the first option) with
// the CLI's flags library (cli/flags.h): --opt=value or --opt value;
// --quick sets smaller defaults that explicit options still override. An
// unknown option, a missing or bad value is an InvalidArgumentError that
// names the option; --help gives a config with `help` set.
absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, const char* const* argv);

// The text `w4jit bench --help` prints, generated from the option
// definitions ParseBenchArgs parses with.
std::string BenchUsage();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_CONFIG_H_
