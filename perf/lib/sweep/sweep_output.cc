#include "perf/lib/sweep/sweep_output.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_json.h"
#include "perf/lib/report/report_table.h"

namespace w4jit::perf {

// sweep.json's rows: the point's fields, then the row's own.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CandidateRow, mode, layer, n, k, group_size,
                                   m, cold, group, params, status, median_us,
                                   gain)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(WinnerRow, mode, layer, n, k, group_size, m,
                                   default_us, tuned_us, params)

namespace {

std::string Group(int64_t g) { return g == -1 ? "pc" : absl::StrCat(g); }

}  // namespace

std::string FormatSweepTable(const SweepReport& report) {
  TextTable t("", {"mode", "layer", "N", "K", "G", "M", "default us",
                   "tuned us", "gain", "tuned parameters"});
  for (const WinnerRow& w : report.winners) {
    const double gain = w.tuned_us > 0 ? w.default_us / w.tuned_us : 0.0;
    t.Add({ToString(w.mode), w.layer, absl::StrCat(w.n), absl::StrCat(w.k),
           Group(w.group_size), absl::StrCat(w.m),
           absl::StrFormat("%.1f", w.default_us),
           absl::StrFormat("%.1f", w.tuned_us), absl::StrFormat("%.2fx", gain),
           w.params});
  }
  std::string s = absl::StrFormat("w4jit sweep: cpu class %s, %d threads\n%s",
                                  report.cpu_class, report.threads, t.str());
  for (const std::string& note : report.notes) {
    absl::StrAppend(&s, "note: ", note, "\n");
  }
  return s;
}

std::string SweepJson(const SweepReport& report) {
  const nlohmann::json doc = {{"schema", "w4jit-sweep/1"},
                              {"cpu_class", report.cpu_class},
                              {"threads", report.threads},
                              {"budget_exhausted", report.budget_exhausted},
                              {"notes", report.notes},
                              {"winners", report.winners},
                              {"candidates", report.candidates}};
  return doc.dump(2) + "\n";
}

absl::StatusOr<std::vector<std::string>> WriteSweepFiles(
    const SweepReport& report, const std::string& dir) {
  return WriteFilesIn(
      dir, {{"tuning.json", internal::TuningToJson(report.tuning) + "\n"},
            {"sweep.json", SweepJson(report)}});
}

}  // namespace w4jit::perf
