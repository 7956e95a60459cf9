// The machine-readable result: the versioned JSON of a run (machine,
// versions, ceilings, layers, every section's rows), written with the
// text tables into one directory. Its CSV and markdown tables, charts and
// comparisons are drawn from it by `python3 -m w4jit.report`.
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// The keys of bench.json's "rows" objects, in order.
const std::vector<std::string>& RowKeys();
// JSON text (the schema is documented in report_files.cc).
std::string ToJson(const BenchReport& report);

// Creates `dir` if needed and writes bench.json and bench.txt (`text`).
// Returns the paths written.
absl::StatusOr<std::vector<std::string>> WriteBenchFiles(
    const BenchReport& report, const std::string& text, const std::string& dir);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_
