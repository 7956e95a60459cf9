// The bench's two charts as SVG documents: the roofline (achieved GFLOP/s
// against arithmetic intensity under the measured ceilings, log-log) and
// the speedup over oneDNN by M.
#ifndef W4JIT_PERF_LIB_REPORT_SVG_CHARTS_H_
#define W4JIT_PERF_LIB_REPORT_SVG_CHARTS_H_

#include <string>

#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

std::string RooflineSvg(const BenchReport& report);
std::string SpeedupSvg(const BenchReport& report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_SVG_CHARTS_H_
