#include "perf/lib/timing/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace w4jit::perf {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct State {
  std::vector<double> samples_s;
  double timed_s = 0.0;       // sum of samples
  double spent_s = 0.0;       // everything run, warm-up calls included
  double first_call_s = 0.0;  // one-time costs included
  double estimate_s = 0.0;    // length of a call after the first
  int batch = 1;
  bool done = false;
  absl::Status error;
};

bool Satisfied(const State& s, const TimingOptions& o) {
  const int n = static_cast<int>(s.samples_s.size());
  return n >= o.max_reps || (n >= o.min_reps && s.timed_s >= o.min_time_s) ||
         s.spent_s >= o.budget_s;
}

// Calls `run` once, timed; false (and s->error set) on failure.
bool Call(const Contender& run, State* s, double* seconds) {
  const Clock::time_point t0 = Clock::now();
  absl::Status status = run();
  *seconds = Seconds(t0, Clock::now());
  s->spent_s += *seconds;
  if (!status.ok()) {
    s->error = std::move(status);
    s->done = true;
    return false;
  }
  return true;
}

void RunBatch(const Contender& run, const TimingOptions& o, bool switched,
              State* s) {
  if (switched) {
    std::this_thread::sleep_for(std::chrono::duration<double>(o.settle_s));
  }
  double seconds = 0.0;
  // A short call is preceded by an untimed one that refills caches and
  // wakes the threads after the other contenders ran; a long one is not
  // worth doubling.
  if (s->estimate_s < 5e-3 && !Call(run, s, &seconds)) return;
  for (int i = 0; i < s->batch && !Satisfied(*s, o); ++i) {
    if (!Call(run, s, &seconds)) return;
    s->samples_s.push_back(seconds);
    s->timed_s += seconds;
  }
  s->done = Satisfied(*s, o);
}

}  // namespace

double Median(std::vector<double>& v) {
  if (v.empty()) return 0.0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) {
    m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  }
  return m;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0.0;
  const double rank = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 *
                                static_cast<double>(v.size()));
  const size_t i = static_cast<size_t>(std::max(rank, 1.0)) - 1;
  std::nth_element(v.begin(), v.begin() + i, v.end());
  return v[i];
}

std::vector<absl::StatusOr<TimingResult>> TimeInterleaved(
    const std::vector<Contender>& contenders, const TimingOptions& options) {
  std::vector<State> states(contenders.size());
  // Warm-up: the first call (one-time costs: page faults, lazy JIT) and,
  // unless it used up the budget, a second one that estimates the length
  // of a call.
  for (size_t i = 0; i < contenders.size(); ++i) {
    State& s = states[i];
    if (!Call(contenders[i], &s, &s.first_call_s)) continue;
    s.estimate_s = s.first_call_s;
    if (s.spent_s < options.budget_s &&
        !Call(contenders[i], &s, &s.estimate_s)) {
      continue;
    }
    s.batch = std::clamp(
        static_cast<int>(options.batch_s / std::max(s.estimate_s, 1e-9)), 1,
        64);
  }
  size_t previous = contenders.size();
  for (bool any = true; any;) {
    any = false;
    for (size_t i = 0; i < contenders.size(); ++i) {
      if (states[i].done) continue;
      RunBatch(contenders[i], options, previous != i, &states[i]);
      previous = i;
      any = true;
    }
  }
  std::vector<absl::StatusOr<TimingResult>> results;
  for (State& s : states) {
    if (!s.error.ok()) {
      results.push_back(s.error);
      continue;
    }
    TimingResult r;
    // A contender whose warm-up used up the budget has only those calls.
    if (s.samples_s.empty()) s.samples_s.push_back(s.estimate_s);
    r.samples = static_cast<int>(s.samples_s.size());
    r.min_us = *std::min_element(s.samples_s.begin(), s.samples_s.end()) * 1e6;
    r.budget_hit =
        r.samples < options.min_reps && s.timed_s < options.min_time_s;
    r.p90_us = Percentile(s.samples_s, 90) * 1e6;
    r.median_us = Median(s.samples_s) * 1e6;
    results.push_back(r);
  }
  return results;
}

}  // namespace w4jit::perf
