// What `w4jit sweep` shows and writes: the winners table, the tuning file,
// and the versioned JSON of every candidate and winner (`python3 -m
// w4jit.report sweep.json` tabulates and compares it).
#ifndef W4JIT_PERF_LIB_SWEEP_SWEEP_OUTPUT_H_
#define W4JIT_PERF_LIB_SWEEP_SWEEP_OUTPUT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/sweep/sweep_runner.h"

namespace w4jit::perf {

// One line per layer, mode and M: default and tuned time, gain, params.
std::string FormatSweepTable(const SweepReport& report);
// sweep.json: schema "w4jit-sweep/1", cpu_class, threads,
// budget_exhausted, notes, winners[...] and candidates[...] (each a
// SweepPoint's mode, layer, n, k, group_size, m and the row's fields).
std::string SweepJson(const SweepReport& report);
// Writes tuning.json and sweep.json into `dir` (created if needed);
// returns the paths written.
absl::StatusOr<std::vector<std::string>> WriteSweepFiles(
    const SweepReport& report, const std::string& dir);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SWEEP_SWEEP_OUTPUT_H_
