// The terminal's summary of a run: the machine and its ceilings, then one
// short line per row of each section that ran (what it is, p50 and min,
// the figure it is for). The full tables, the charts and the comparison of
// two runs are python3 -m w4jit.report's, drawn from bench.json.
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_

#include <string>
#include <vector>

#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

std::string FormatReport(const BenchReport& report);

// The terminal tables of every job and of `w4jit sweep`: columns as wide as
// their widest cell, left-aligned; a row's last cell is not padded.
class TextTable {
 public:
  // A title prints as "== title ==" after a blank line; "" prints none.
  TextTable(std::string title, std::vector<std::string> head);
  void Add(std::vector<std::string> cells);
  // The row's naming cells, then its figures if it ran, else its status;
  // then its note.
  void Add(std::vector<std::string> cells, const TimedRow& row,
           const std::vector<std::string>& figures);
  std::string str() const;

 private:
  std::string title_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_
