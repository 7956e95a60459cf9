// Derived figures of a timed row: rates, its place under the roofline, and
// speedups over the oneDNN peers timed on the same shape in the same run.
#ifndef W4JIT_PERF_LIB_REPORT_ROW_METRICS_H_
#define W4JIT_PERF_LIB_REPORT_ROW_METRICS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "perf/lib/ceilings/roofline.h"
#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// The compute peak of what a layer computes with (Layer::compute_at):
// the int8 dot in int16 (AVX2) or VNNI (zmm), the bf16 dot, the f32 FMA at
// its width, or the AMX tile op. nullopt on the reference path.
std::optional<PeakOp> PeakOpOf(LayerCompute compute);

// BenchRow::compute_op of a w4jit layer at some M: PeakOpOf's key
// ("f32_fma_zmm", "bf16_dot_zmm", "int8_vnni_zmm", "int8_avx2_i16",
// "amx_bf16", "amx_int8"), or "scalar" on the reference path.
std::string ComputeOpKey(LayerCompute compute);

// BenchRow::compute_op of a oneDNN peer (`impl` kImplOneDnn*) from the
// implementation oneDNN names: its AMX tile op where it runs AMX
// ("brg:avx512_core_amx_int8": "amx_int8", "amx_bf16"), else its type's
// dot ("int8_dot", "bf16_dot": judged against the best vector peak of
// that type the CPU has).
std::string PeerComputeOp(const std::string& impl,
                          const std::string& onednn_impl_name);

// True for a row whose compute op is an AMX tile op.
bool RunsAmx(const BenchRow& row);

// The compute peak a row is judged against: that of its compute_op (an
// int8 or bf16 dot: the best of that type measured). Empty if none was
// measured: an AMX row without an AMX peak has no compute bound, since a
// vector peak does not bound the tile unit.
std::string ComputePeakKeyFor(const BenchRow& row, const Roofline& roof);

// The two roofline bounds of a row (docs/bench.md): the
// time to read its weight bytes at the read rate measured at its footprint,
// and the time of its MACs at its instruction's compute peak. The larger
// binds. A bound that was not measured is 0.
struct RowBounds {
  double memory_us = 0.0;
  std::string memory_basis;  // "L3 read 16.8 MB": level and probe footprint
  double compute_us = 0.0;
  std::string compute_basis;        // "peak bf16_dot_zmm"
  double compute_macs_per_s = 0.0;  // the peak compute_us is taken at
  bool compute_binds() const { return compute_us > memory_us; }
  double bound_us() const { return compute_binds() ? compute_us : memory_us; }
  const std::string& basis() const {
    return compute_binds() ? compute_basis : memory_basis;
  }
};

// The bounds of `row` (its m, n, k, weight_bytes, footprint_bytes, impl and
// kernel) under the ceilings of `roof`, each raised to the row's
// interleaved ceiling (ceiling_rate, ceiling_basis) where that is the same
// bound and higher.
RowBounds BoundsFor(const BenchRow& row, const Roofline& roof);

// Raises each ceiling of `roof` to the best timing of the same ceiling
// interleaved with `rows` (compute peaks by key, read bandwidths at the
// row's footprint, within 10%): every figure is a measurement of what the
// machine can do, and the best one is the ceiling.
void FoldInterleavedCeilings(const std::vector<BenchRow>& rows, Roofline* roof);

// Sets gflops, weight_gbps, the bounds (bound, bound_us, memory_bound_us,
// memory_basis, compute_bound_us, compute_basis, compute_peak_gmacs),
// roofline_pct (and
// roofline_pct_min from min_us), roofline_basis and interleaved_pct of an
// ok row from time_us, m, n, k, weight_bytes, footprint_bytes and
// ceiling_rate: roofline_pct is the binding bound's time over the row's
// (BoundsFor: the best of the run's ceiling and the row's interleaved one,
// so a disturbed, low interleaved ceiling cannot push a figure past 100%),
// interleaved_pct the same against the interleaved ceiling alone.
void FillRowMetrics(const Roofline& roof, BenchRow* row);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_ROW_METRICS_H_
