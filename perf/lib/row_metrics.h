// Derived figures of a timed row: rates, its place under the roofline, and
// speedups over the oneDNN peers timed on the same shape in the same run.
#ifndef W4JIT_PERF_LIB_ROW_METRICS_H_
#define W4JIT_PERF_LIB_ROW_METRICS_H_

#include <string>
#include <vector>

#include "perf/lib/bench_report.h"
#include "perf/lib/roofline.h"

namespace w4jit::perf {

// Rows with M up to this are judged against bandwidth, larger ones against
// a compute peak (shared/design/performance.md).
inline constexpr int64_t kBandwidthBoundMaxM = 8;

// The compute peak a row is judged against: the instruction its kernel
// runs (from the kernel name's flavour and ISA suffix), or for oneDNN the
// best int8 / bf16 one the CPU has. Empty if none was measured.
std::string ComputePeakKeyFor(const BenchRow& row, const Roofline& roof);

// Sets gflops, weight_gbps, roofline_pct and roofline_basis of an ok row
// from time_us, m, n, k, weight_bytes and footprint_bytes: against its
// interleaved ceiling_rate if it has one (basis marked '*'), else against
// the run's roofline.
void FillRowMetrics(const Roofline& roof, BenchRow* row);

// Sets speedup_vs_bf16 / speedup_vs_u8s8 of every ok w4jit row from the ok
// peer rows of the same layer, M and cache state.
void FillSpeedups(std::vector<BenchRow>* rows);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_ROW_METRICS_H_
