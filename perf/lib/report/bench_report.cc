#include "perf/lib/report/bench_report.h"

#include "absl/strings/str_cat.h"

namespace w4jit::perf {

const char* ToString(RowStatus s) {
  switch (s) {
    case RowStatus::kOk:
      return "ok";
    case RowStatus::kFailed:
      return "FAILED";
    case RowStatus::kNotAvailable:
      return "n/a";
    case RowStatus::kError:
      return "error";
  }
  return "?";
}

std::string ModelSettingLabel(int prefetch, const std::string& tuning) {
  return prefetch >= 0 ? absl::StrCat("pf", prefetch) : tuning;
}

namespace {

// t / plain of an ok row, else 0 ("unknown", as the speedups).
double OverPlain(const ActOrderRow& row, double t, double plain) {
  return row.ok() && plain > 0 ? t / plain : 0.0;
}

}  // namespace

double ActOrderRow::act_over_plain_p50() const {
  return OverPlain(*this, act_p50_us, plain_p50_us);
}
double ActOrderRow::act_over_plain_min() const {
  return OverPlain(*this, act_min_us, plain_min_us);
}
double ActOrderRow::copy_over_plain_p50() const {
  return OverPlain(*this, copy_p50_us, plain_p50_us);
}
double ActOrderRow::copy_over_plain_min() const {
  return OverPlain(*this, copy_min_us, plain_min_us);
}

double MoeBenchRow::roof_pct() const {
  if (min_us <= 0 || read_bytes_per_s <= 0) return 0.0;
  return 100.0 * touched_bytes / (min_us * 1e-6) / read_bytes_per_s;
}

double MoeBenchRow::peak_pct() const {
  if (min_us <= 0 || peak_macs_per_s <= 0) return 0.0;
  return 100.0 * macs / (min_us * 1e-6) / peak_macs_per_s;
}

const char* MoeBenchRow::bound() const {
  const double memory = roof_pct(), compute = peak_pct();
  if (memory <= 0 && compute <= 0) return "";
  return compute > memory ? kBoundCompute : kBoundMemory;
}

bool BenchReport::any_failed() const {
  for (const BenchRow& r : rows) {
    if (r.status == RowStatus::kFailed || r.status == RowStatus::kError) {
      return true;
    }
  }
  for (const ActOrderRow& r : act_order) {
    if (r.status == RowStatus::kFailed || r.status == RowStatus::kError) {
      return true;
    }
  }
  for (const AccuracyRow& r : accuracy) {
    if (r.status == RowStatus::kFailed || r.status == RowStatus::kError) {
      return true;
    }
  }
  for (const ModelRow& r : model_rows) {
    if (r.status == RowStatus::kFailed || r.status == RowStatus::kError) {
      return true;
    }
  }
  return false;
}

}  // namespace w4jit::perf
