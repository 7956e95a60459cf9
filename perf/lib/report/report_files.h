// Machine-readable results: CSV (one line per row) and JSON (everything:
// machine, versions, ceilings, layers, rows), plus the SVG charts, written
// into one directory.
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// The CSV columns, in order.
const std::vector<std::string>& CsvColumns();
std::string ToCsv(const BenchReport& report);
// The --scaling rows as CSV (scaling.csv).
std::string ScalingCsv(const BenchReport& report);
// The --act-order rows as CSV (act_order.csv): every ActOrderRow field and
// the act/plain and copy/plain ratios of the p50s and mins.
std::string ActOrderCsv(const BenchReport& report);
// The --accuracy rows as CSV (accuracy.csv): every AccuracyRow field.
std::string AccuracyCsv(const BenchReport& report);
// The --model rows as CSV (model.csv): every ModelRow field.
std::string ModelCsv(const BenchReport& report);
// The --moe rows as CSV (moe.csv): every MoeBenchRow field and its
// roofline and peak percentages.
std::string MoeCsv(const BenchReport& report);
// JSON text (the schema is documented in report_files.cc).
std::string ToJson(const BenchReport& report);

// Creates `dir` if needed and writes bench.json and bench.txt (`text`);
// for a run of layers also bench.csv, roofline.svg and speedup.svg, with
// --scaling scaling.csv, with --act-order act_order.csv, with --accuracy
// accuracy.csv; for a --model run model.csv; for a --moe run moe.csv.
// Returns the paths written.
absl::StatusOr<std::vector<std::string>> WriteBenchFiles(
    const BenchReport& report, const std::string& text, const std::string& dir);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_FILES_H_
