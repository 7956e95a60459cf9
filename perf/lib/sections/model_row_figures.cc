#include "perf/lib/sections/model_row_figures.h"

namespace w4jit::perf {
namespace {

// units per run at `us` microseconds per run, in G per second.
double GigaRate(double units, double us) {
  return us > 0 ? units / (us * 1e-6) * 1e-9 : 0.0;
}

}  // namespace

void FillModelRowPeak(const TimingResult& peak, double peak_macs,
                      ModelRow* row) {
  row->peak_gmacs = GigaRate(peak_macs, peak.median_us);
  row->peak_gmacs_best = GigaRate(peak_macs, peak.min_us);
}

void FillModelRowFigures(const TimingResult& step, const TimingResult& read,
                         double read_bytes, ModelRow* row) {
  row->samples = step.samples;
  row->time_ms = step.median_us * 1e-3;
  row->min_ms = step.min_us * 1e-3;
  row->p90_ms = step.p90_us * 1e-3;
  row->read_gbps = GigaRate(read_bytes, read.median_us);
  row->read_gbps_best = GigaRate(read_bytes, read.min_us);
  row->read_tail = read.min_us > 0 ? read.p90_us / read.min_us : 0.0;
}

}  // namespace w4jit::perf
