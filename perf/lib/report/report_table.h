// The terminal's summary of a run: the machine and its ceilings, then one
// short line per row of each section that ran (what it is, p50 and min,
// the figure it is for). The full tables, the charts and the comparison of
// two runs are python3 -m w4jit.report's, drawn from bench.json.
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_

#include <string>

#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

std::string FormatReport(const BenchReport& report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_
