// `w4jit bench accuracy`: what each way of computing a
// layer costs in accuracy and in time. Per layer, three layers from the
// same int4 weights: W4A16, DA8W4 with per-token activation scales and
// DA8W4 with per-group ones (LayerDesc::act_quant). Their relative L2
// error against float64 is measured once, on Gaussian rows of x with a
// few outlier channels (check/accuracy.h); then at every M the three are
// checked against the reference and timed interleaved.
#ifndef W4JIT_PERF_LIB_SECTIONS_ACCURACY_BENCH_H_
#define W4JIT_PERF_LIB_SECTIONS_ACCURACY_BENCH_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// Appends report->accuracy rows (three per layer and M) for `config`.
absl::Status RunAccuracy(const AccuracyOptions& config,
                         const std::function<void(const std::string&)>& say,
                         BenchReport* report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_ACCURACY_BENCH_H_
