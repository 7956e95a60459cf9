// The core of every bench figure: first check each implementation's output
// against its oracle, then time only the correct ones, interleaved. A wrong
// kernel is never timed or reported as a figure: its row is FAILED with the
// reason. Tests inject wrong callables here.
#ifndef W4JIT_PERF_LIB_TIMING_CHECKED_TIMING_H_
#define W4JIT_PERF_LIB_TIMING_CHECKED_TIMING_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "perf/lib/report/bench_report.h"
#include "perf/lib/timing/timing.h"

namespace w4jit::perf {

struct Contestant {
  std::string impl;        // BenchRow::impl
  std::string kernel;      // BenchRow::kernel
  std::string compute_op;  // BenchRow::compute_op
  int64_t weight_bytes = 0;
  int64_t footprint_bytes = 0;
  std::function<absl::Status()> run;  // one call
  // Checks the output of the call that just ran; empty for peers, whose
  // results are not compared (their data is unrelated random values).
  std::function<absl::Status()> verify;
  // Set instead of `run` for an implementation that cannot run here: the
  // row is reported with this status and note.
  RowStatus unavailable = RowStatus::kOk;
  std::string unavailable_note;
};

// Copies a timing's sample count into `row`, or makes `row` an error with
// the timing's failure ("run failed: ..."). True when the row is timed.
bool TakeSamples(const absl::StatusOr<TimingResult>& timing, TimedRow* row);

// One row per contestant, copied from `shape` (layer, n, k, group, m,
// cold) and filled with status, timing, weight bytes and kernel.
std::vector<BenchRow> TimeCheckedContestants(
    const BenchRow& shape, const std::vector<Contestant>& contestants,
    const TimingOptions& timing);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_TIMING_CHECKED_TIMING_H_
