// The machine-readable result: the versioned JSON of a run (machine,
// versions, ceilings, layers, every section's rows), written with the
// text tables into one directory. Its CSV and markdown tables, charts and
// comparisons are drawn from it by `python3 -m w4jit.report`.
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// bench.json's text. Top-level keys: schema ("w4jit-bench/2":
// measurements only; the figures they imply, speedups, efficiencies,
// ratios, a model's tokens/s, are w4jit.report's derive.py),
// w4jit_version, onednn_version, date_utc, preset, threads, cpu{...},
// options{ms, impls, reps, min_time_s}, peaks[...], bandwidths[...],
// layers[...], wait_policy, rows[...], scaling[...], act_order[...],
// accuracy[...], model{name, read_bytes, layers[...], rows[...]}, moe[...],
// any_failed. The sections the job did not run are empty arrays (model:
// null).
std::string ToJson(const BenchReport& report);

// Creates `dir` if needed and writes each (name, text) into it. Returns the
// paths written, or the first error, naming the path.
absl::StatusOr<std::vector<std::string>> WriteFilesIn(
    const std::string& dir,
    const std::vector<std::pair<std::string, std::string>>& files);

// WriteFilesIn: bench.json and bench.txt (`text`).
absl::StatusOr<std::vector<std::string>> WriteBenchFiles(
    const BenchReport& report, const std::string& text, const std::string& dir);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_
