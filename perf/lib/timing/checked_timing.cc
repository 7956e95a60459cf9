#include "perf/lib/timing/checked_timing.h"

#include "absl/strings/str_cat.h"

namespace w4jit::perf {

bool TakeSamples(const absl::StatusOr<TimingResult>& timing, TimedRow* row) {
  if (!timing.ok()) {
    row->status = RowStatus::kError;
    row->note = absl::StrCat("run failed: ", timing.status().message());
    return false;
  }
  row->samples = timing->samples;
  return true;
}

std::vector<BenchRow> TimeCheckedContestants(
    const BenchRow& shape, const std::vector<Contestant>& contestants,
    const TimingOptions& timing) {
  std::vector<BenchRow> rows;
  std::vector<Contender> to_time;
  std::vector<size_t> timed_rows;
  for (const Contestant& c : contestants) {
    BenchRow row = shape;
    row.impl = c.impl;
    row.kernel = c.kernel;
    row.compute_op = c.compute_op;
    row.weight_bytes = c.weight_bytes;
    row.footprint_bytes = c.footprint_bytes;
    if (c.unavailable != RowStatus::kOk || !c.run) {
      row.status =
          c.unavailable != RowStatus::kOk ? c.unavailable : RowStatus::kError;
      row.note = c.unavailable_note;
      rows.push_back(row);
      continue;
    }
    if (c.verify) {
      absl::Status s = c.run();
      if (s.ok()) {
        s = c.verify();
        if (!s.ok()) {
          row.status = RowStatus::kFailed;
          row.note = absl::StrCat("wrong output, not timed: ", s.message());
        }
      } else {
        row.status = RowStatus::kError;
        row.note = absl::StrCat("run failed: ", s.message());
      }
      if (!row.ok()) {
        rows.push_back(row);
        continue;
      }
    }
    timed_rows.push_back(rows.size());
    to_time.push_back(c.run);
    rows.push_back(row);
  }
  const std::vector<absl::StatusOr<TimingResult>> results =
      TimeInterleaved(to_time, timing);
  for (size_t i = 0; i < results.size(); ++i) {
    BenchRow& row = rows[timed_rows[i]];
    if (!TakeSamples(results[i], &row)) continue;
    row.time_us = results[i]->median_us;
    row.min_us = results[i]->min_us;
    row.p90_us = results[i]->p90_us;
    if (results[i]->budget_hit) {
      row.note = absl::StrCat("time budget: ", row.samples, " sample(s)");
    }
  }
  return rows;
}

}  // namespace w4jit::perf
