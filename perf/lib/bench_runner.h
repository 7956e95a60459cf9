// `w4jit bench` without the printing: measures the roofline, then checks
// and times every layer of the configuration (layer_bench.h) and derives
// the figures. The CLI prints and writes what it returns.
#ifndef W4JIT_PERF_LIB_BENCH_RUNNER_H_
#define W4JIT_PERF_LIB_BENCH_RUNNER_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "perf/lib/bench_config.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// Receives one line of progress at a time (the library never prints).
using ProgressFn = std::function<void(const std::string& line)>;

// An error only if the run could not proceed (e.g. no memory); wrong
// kernels are FAILED rows of an OK report (see BenchReport::any_failed).
// Sets the thread count of w4jit and oneDNN to config.threads.
// `status_line`, if set, gets a line that the next one replaces (the
// --model section's packing progress, for a terminal; "" clears it).
// A report's header (versions, date, CPU, threads, timing options) for
// `config`, after SetNumThreads(config.threads); no rows.
BenchReport NewReport(const BenchConfig& config);

absl::StatusOr<BenchReport> RunBench(const BenchConfig& config,
                                     const ProgressFn& progress = nullptr,
                                     const ProgressFn& status_line = nullptr);

// "2024-05-01T12:00:00Z", now.
std::string UtcNow();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_RUNNER_H_
