// The --act-order section of `w4jit bench`: the cost of GPTQ act-order.
// Each layer in each mode at each M twice, from the same weights: once
// from a plain GPTQ checkpoint, once from one whose g_idx scatters the
// groups over K (the layer permutes K at creation and reads x through the
// permutation). Both are checked against the reference, then timed
// interleaved.
#ifndef W4JIT_PERF_LIB_SECTIONS_ACT_ORDER_BENCH_H_
#define W4JIT_PERF_LIB_SECTIONS_ACT_ORDER_BENCH_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// Appends report->act_order rows for every layer, mode and M of `config`.
absl::Status RunActOrder(const LayersOptions& config,
                         const std::function<void(const std::string&)>& say,
                         BenchReport* report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_ACT_ORDER_BENCH_H_
