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

// Raises each ceiling of `roof` to the best timing of the same ceiling
// interleaved with `rows` (compute peaks by key, read bandwidths at the
// row's footprint, within 10%): every figure is a measurement of what the
// machine can do, and the best one is the ceiling.
void FoldInterleavedCeilings(const std::vector<BenchRow>& rows, Roofline* roof);

// Sets gflops, weight_gbps, roofline_pct (and roofline_pct_min from
// min_us), roofline_basis and
// interleaved_pct of an ok row from time_us, m, n, k, weight_bytes,
// footprint_bytes and ceiling_rate: roofline_pct against the best of the
// run's ceiling and the row's interleaved one (so a disturbed, low
// interleaved ceiling cannot push a figure past 100%), interleaved_pct
// against the interleaved one alone.
void FillRowMetrics(const Roofline& roof, BenchRow* row);

// Sets speedup_vs_bf16 / speedup_vs_u8s8 of every ok w4jit row from the ok
// peer rows of the same layer, M and cache state.
void FillSpeedups(std::vector<BenchRow>* rows);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_ROW_METRICS_H_
