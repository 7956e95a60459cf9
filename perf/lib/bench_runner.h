// `w4jit bench` without the printing: runs its jobs (bench_options.h) and
// derives the figures. The CLI prints and writes what it returns.
#ifndef W4JIT_PERF_LIB_BENCH_RUNNER_H_
#define W4JIT_PERF_LIB_BENCH_RUNNER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// Receives one line of progress at a time (the library never prints).
using ProgressFn = std::function<void(const std::string& line)>;

// A report's header (versions, date, CPU, threads, timing options) for
// `job`, after SetNumThreads of its thread count; no rows.
BenchReport NewReport(const BenchJob& job);

// Runs `jobs` in order into one report (its header from the first). An
// error only if a job could not proceed (e.g. no memory); wrong kernels
// are FAILED rows of an OK report (see BenchReport::any_failed). Sets the
// thread count of w4jit and oneDNN to each job's. `status_line`, if set,
// gets a line that the next one replaces (the model job's packing
// progress, for a terminal; "" clears it).
absl::StatusOr<BenchReport> RunBench(const std::vector<BenchJob>& jobs,
                                     const ProgressFn& progress = nullptr,
                                     const ProgressFn& status_line = nullptr);

// "2024-05-01T12:00:00Z", now.
std::string UtcNow();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_RUNNER_H_
