// All figures of one layer shape: the w4jit modes (hot, and cold for
// decode M) and the oneDNN peers, each M checked and timed interleaved.
#ifndef W4JIT_PERF_LIB_SECTIONS_LAYER_BENCH_H_
#define W4JIT_PERF_LIB_SECTIONS_LAYER_BENCH_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// Appends the layer's rows and LayerInfo to *report, and the bandwidth at
// its footprints to report->roofline. Progress goes to `say`.
absl::Status BenchOneLayer(const LayersOptions& config, const LayerShape& shape,
                           const std::function<void(const std::string&)>& say,
                           BenchReport* report);

// Distinct weight copies to rotate through so that `copies * bytes`
// exceeds twice the last-level cache (at least 2, at most 64).
int ColdCopies(int64_t bytes, int64_t llc_bytes);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_LAYER_BENCH_H_
