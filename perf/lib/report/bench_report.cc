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
