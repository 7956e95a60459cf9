// What `w4jit bench` runs, and the parsing of its command line.
#ifndef W4JIT_PERF_LIB_BENCH_CONFIG_H_
#define W4JIT_PERF_LIB_BENCH_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/roofline.h"
#include "perf/lib/timing.h"
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
  // act-order (perf/lib/act_order_bench.h).
  bool act_order = false;
  // --moe=<model>,...: run only the fused-MoE section
  // (perf/lib/moe_bench.h) for these models, at moe_tokens (the --m list
  // when one was given).
  std::vector<std::string> moe;
  std::vector<int64_t> moe_tokens = {1, 4, 16, 64, 256};
  // The --accuracy section: every layer, W4A16 and DA8W4 per token and per
  // group, error on activations with outlier channels beside the speed at
  // every M (perf/lib/accuracy_bench.h).
  bool accuracy = false;
  int outliers = 8;             // outlier channels of K
  float outlier_scale = 50.0f;  // their magnitude over the others'
  int accuracy_rows = 16;       // rows of x the error is measured on
  bool quick = false;
  bool help = false;
};

// Parses the arguments after `bench` (argv[0] is the first option).
// Accepts --opt=value and --opt value. --quick sets smaller defaults that
// explicit options still override.
absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, const char* const* argv);

// The text `w4jit bench --help` prints.
std::string BenchUsage();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_CONFIG_H_
