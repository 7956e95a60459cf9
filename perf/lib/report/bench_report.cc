#include "perf/lib/report/bench_report.h"

#include <algorithm>

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
  const auto failed = [](const auto& section) {
    return std::any_of(section.begin(), section.end(),
                       [](const TimedRow& r) { return r.failed(); });
  };
  return failed(rows) || failed(scaling) || failed(act_order) ||
         failed(accuracy) || failed(model_rows);
}

}  // namespace w4jit::perf
