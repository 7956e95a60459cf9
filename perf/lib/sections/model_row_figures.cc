#include "perf/lib/sections/model_row_figures.h"

namespace w4jit::perf {
namespace {

constexpr double kGB = 1e9;

}  // namespace

void FillModelRowPeak(const TimingResult& peak, double peak_macs,
                      ModelRow* row) {
  const auto rate = [](double macs, double us) {
    return us > 0 ? macs / (us * 1e-6) / 1e9 : 0.0;
  };
  row->peak_gmacs = rate(peak_macs, peak.median_us);
  row->peak_gmacs_best = rate(peak_macs, peak.min_us);
  const double step_gmacs = rate(row->macs, row->time_ms * 1e3);
  const double step_gmacs_max = rate(row->macs, row->min_ms * 1e3);
  row->peak_pct =
      row->peak_gmacs > 0 ? 100.0 * step_gmacs / row->peak_gmacs : 0.0;
  row->peak_pct_min = row->peak_gmacs_best > 0
                          ? 100.0 * step_gmacs_max / row->peak_gmacs_best
                          : 0.0;
  // The bound that binds: the longer of the time to read the step's
  // bytes at the read's best rate and to do its MACs at the best peak.
  const double read_s =
      row->read_gbps_best > 0
          ? static_cast<double>(row->weight_bytes) / (row->read_gbps_best * kGB)
          : 0.0;
  const double compute_s =
      row->peak_gmacs_best > 0 ? row->macs / (row->peak_gmacs_best * 1e9) : 0.0;
  row->bound = read_s == 0.0 && compute_s == 0.0 ? ""
               : compute_s > read_s              ? kBoundCompute
                                                 : kBoundMemory;
}

void FillModelRowFigures(const TimingResult& step, const TimingResult& read,
                         double read_bytes, ModelRow* row) {
  row->samples = step.samples;
  row->time_ms = step.median_us * 1e-3;
  row->min_ms = step.min_us * 1e-3;
  row->p90_ms = step.p90_us * 1e-3;
  const auto rate = [](double bytes, double us) {
    return us > 0 ? bytes / (us * 1e-6) / kGB : 0.0;
  };
  const double bytes = static_cast<double>(row->weight_bytes);
  row->tokens_per_s =
      step.median_us > 0 ? static_cast<double>(row->m) / (step.median_us * 1e-6)
                         : 0.0;
  row->weight_gbps = rate(bytes, step.median_us);
  row->weight_gbps_max = rate(bytes, step.min_us);
  row->read_gbps = rate(read_bytes, read.median_us);
  row->read_gbps_best = rate(read_bytes, read.min_us);
  row->read_pct =
      row->read_gbps > 0 ? 100.0 * row->weight_gbps / row->read_gbps : 0.0;
  row->read_pct_min = row->read_gbps_best > 0
                          ? 100.0 * row->weight_gbps_max / row->read_gbps_best
                          : 0.0;
  row->tail = step.min_us > 0 ? step.p90_us / step.min_us : 0.0;
  row->read_tail = read.min_us > 0 ? read.p90_us / read.min_us : 0.0;
  // The whole model's, from the layers built: a step's time scales with
  // its decoder layers.
  if (row->model_layers > 0 && row->layers > 0) {
    const double scale = static_cast<double>(row->layers) / row->model_layers;
    row->model_tokens_per_s = row->tokens_per_s * scale;
    row->model_tokens_per_s_best =
        step.min_us > 0
            ? static_cast<double>(row->m) / (step.min_us * 1e-6) * scale
            : 0.0;
  }
}

}  // namespace w4jit::perf
