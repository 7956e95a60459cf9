// `w4jit bench scaling`: one layer at M = 1 and M = 256,
// timed for 1..T threads on each threading backend (w4jit's pool, OpenMP),
// for the parallel efficiency that w4jit.report derives. Shows what the
// runtime delivers of the kernels' single-thread speed.
#ifndef W4JIT_PERF_LIB_SECTIONS_SCALING_BENCH_H_
#define W4JIT_PERF_LIB_SECTIONS_SCALING_BENCH_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// The layer --scaling times: the one named config.layer, else the
// first square one (4096 x 4096 in llama3-8b), else the first. nullptr if
// the name matches none.
const LayerShape* ScalingLayer(const ScalingOptions& config);

// Appends report->scaling rows for every mode of the configuration. Leaves
// the thread count and threading backend as it found them.
absl::Status RunScaling(const ScalingOptions& config,
                        const std::function<void(const std::string&)>& say,
                        BenchReport* report);

// How the threads of w4jit and of oneDNN wait in this process, for the
// report header: OpenMP's policy from the environment, the pool's spin.
std::string DescribeWaitPolicy(const TimingOptions& timing);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_SCALING_BENCH_H_
