// The --moe section of `w4jit bench`: a fused MoE layer (MoeLayer) of a
// model's shape per mode, routing and token count T: time per call (min
// and median, interleaved), the packed bytes of the experts the routing
// touches and their rate against the read bandwidth measured at that
// footprint (the decode roofline), and the arithmetic rate against the
// mode's compute peak. Each configuration is checked against the float64
// oracle (check/moe_check.h) before it is timed. Beside it, the loop of
// per-expert Layer calls a host would write (MoeBenchRow::loop_*).
#ifndef W4JIT_PERF_LIB_SECTIONS_MOE_BENCH_H_
#define W4JIT_PERF_LIB_SECTIONS_MOE_BENCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/ceilings/roofline.h"
#include "perf/lib/report/bench_report.h"
#include "perf/lib/timing/timing.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

struct MoePreset {
  std::string name;
  int64_t hidden, intermediate, experts, top_k;
  int64_t group_size = 128;
  bool biases = false;  // w13 [2I] and w2 [H] per expert
  Activation activation = Activation::kSilu;
};

// "qwen3-30b-a3b" (H 2048, I 768, E 128, k 8), "mixtral-8x7b" (H 4096,
// I 14336, E 8, k 2), "gpt-oss-20b" (H = I = 2880, E 32, k 4, group 32,
// biases, swigluoai), "gpt-oss-120b" (E 128, otherwise gpt-oss-20b's);
// nullptr if unknown.
const MoePreset* FindMoePreset(const std::string& name);
std::string MoePresetNames();

struct MoeBenchOptions {
  std::vector<std::string> presets;
  std::vector<int64_t> tokens = {1, 4, 16, 64, 256};
  std::vector<Mode> modes = {Mode::kW4A16, Mode::kDA8W4};
  TimingOptions timing;
  RooflineOptions roofline;
};

absl::StatusOr<std::vector<MoeBenchRow>> RunMoeBench(
    const MoeBenchOptions& options,
    const std::function<void(const std::string&)>& say);

// The rows as a text table (their CSV and JSON: report_files.h).
std::string MoeTable(const std::vector<MoeBenchRow>& rows);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MOE_BENCH_H_
