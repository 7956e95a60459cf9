// A --model row's figures from its step timings: tokens/s, weight bytes/s
// against the read probe timed in the same rounds, and (a MoE model's)
// MACs/s against the compute peak.
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_ROW_FIGURES_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_ROW_FIGURES_H_

#include "perf/lib/report/bench_report.h"
#include "perf/lib/timing/timing.h"

namespace w4jit::perf {

// Fills a row's figures from its step timings and the read probe's timed
// in the same rounds (read_bytes per probe call).
void FillModelRowFigures(const TimingResult& step, const TimingResult& read,
                         double read_bytes, ModelRow* row);

// A MoE row's compute-peak figures (after FillModelRowFigures): the peak
// loop timed in the same rounds doing peak_macs per run, row->macs per
// step, and the bound that binds.
void FillModelRowPeak(const TimingResult& peak, double peak_macs,
                      ModelRow* row);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_ROW_FIGURES_H_
