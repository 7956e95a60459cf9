// A --model row's timings: its step's, and the rates of the read probe
// and (a MoE model's) the compute peak loop timed in the same rounds. The
// figures they imply (tokens/s, shares of the read and the peak, the bound
// that binds) are w4jit.report's (derive.py).
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_ROW_FIGURES_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_ROW_FIGURES_H_

#include "perf/lib/report/bench_report.h"
#include "perf/lib/timing/timing.h"

namespace w4jit::perf {

// The step's times and the read probe's rates (read_bytes per probe
// call) and tail.
void FillModelRowFigures(const TimingResult& step, const TimingResult& read,
                         double read_bytes, ModelRow* row);

// The compute peak loop's rates, peak_macs per run.
void FillModelRowPeak(const TimingResult& peak, double peak_macs,
                      ModelRow* row);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_ROW_FIGURES_H_
