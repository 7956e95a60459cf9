// What `w4jit sweep` shows and writes: the winners table, the CSV of every
// candidate, and the tuning file.
#ifndef W4JIT_PERF_LIB_SWEEP_SWEEP_OUTPUT_H_
#define W4JIT_PERF_LIB_SWEEP_SWEEP_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/sweep/sweep_runner.h"

namespace w4jit::perf {

// One line per layer, mode and M: default and tuned time, gain, params.
std::string FormatSweepTable(const SweepReport& report);
// Header line plus one line per candidate row.
std::string SweepCandidatesCsv(const SweepReport& report);
// Writes tuning.json and candidates.csv into `dir` (created if needed);
// returns the paths written.
absl::StatusOr<std::vector<std::string>> WriteSweepFiles(
    const SweepReport& report, const std::string& dir);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SWEEP_SWEEP_OUTPUT_H_
