// Times several implementations of the same work in one process,
// interleaved in short batches so that drift of a shared machine (clock,
// neighbours) hits them all alike. Each has a time budget, so that a slow
// path (the reference) is measured a few times instead of hanging the run.
#ifndef W4JIT_PERF_LIB_TIMING_TIMING_H_
#define W4JIT_PERF_LIB_TIMING_TIMING_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace w4jit::perf {

struct TimingOptions {
  int min_reps = 20;        // samples wanted per contender
  double min_time_s = 0.1;  // and at least this much timed work
  double budget_s = 3.0;    // a contender stops after this much, whatever
  int max_reps = 100000;    // never more samples than this
  // Pause before a batch that follows another contender's: OpenMP workers
  // (oneDNN's, libgomp) keep spinning for ~10 ms after a parallel region
  // and would steal the next contender's cores.
  double settle_s = 0.02;
  double batch_s = 0.01;  // target length of one batch
};

struct TimingResult {
  int samples = 0;
  double median_us = 0.0;
  double min_us = 0.0;
  double p90_us = 0.0;      // 90th percentile: how bad the slow calls are
  bool budget_hit = false;  // stopped by the budget before min_reps/min_time
};

// One call of the work; an error stops that contender and is returned as
// its result.
using Contender = std::function<absl::Status()>;

std::vector<absl::StatusOr<TimingResult>> TimeInterleaved(
    const std::vector<Contender>& contenders, const TimingOptions& options);

// Median of `v` (which it sorts); 0 for an empty vector.
double Median(std::vector<double>& v);

// The p-th percentile (0..100, nearest rank) of `v` (which it reorders);
// 0 for an empty vector.
double Percentile(std::vector<double>& v, double p);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_TIMING_TIMING_H_
