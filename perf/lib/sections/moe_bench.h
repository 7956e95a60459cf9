// `w4jit bench moe`: a fused MoE layer (MoeLayer) of a
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
#include "perf/lib/bench_options.h"
#include "perf/lib/ceilings/peak_loop_generator.h"
#include "perf/lib/ceilings/roofline.h"
#include "perf/lib/report/bench_report.h"
#include "perf/lib/timing/timing.h"
#include "perf/model_presets.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// One of MoePresets() (perf/model_presets.h); nullptr if unknown.
const MoePreset* FindMoePreset(const std::string& name);
std::string MoePresetNames();

// Routing of t tokens to k of `experts` experts ([t, k] ids, row-major):
// each token's k distinct experts drawn uniformly from an mt19937 seeded
// with `seed`; skewed puts expert 0 first in every token (the rest
// uniform).
std::vector<int32_t> MoeRouting(int64_t t, int64_t k, int64_t experts,
                                bool skewed, uint32_t seed);

// The rows of options.presets (MoePresets names) at every token count,
// mode and routing.
absl::StatusOr<std::vector<MoeBenchRow>> RunMoeBench(
    const MoeOptions& options,
    const std::function<void(const std::string&)>& say);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MOE_BENCH_H_
