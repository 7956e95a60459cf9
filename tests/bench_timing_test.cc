// The interleaved timer counts samples as asked, honours its budget and
// reports errors; the whole bench runs end to end on a tiny layer. No
// assertion depends on how fast anything is.
#include <chrono>
#include <thread>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/bench_runner.h"
#include "perf/lib/report/report_files.h"
#include "perf/lib/sections/layer_bench.h"
#include "perf/lib/timing/timing.h"

namespace w4jit::perf {
namespace {

TEST(BenchTiming, TakesTheRequestedSamplesInterleaved) {
  TimingOptions o;
  o.min_reps = 5;
  o.min_time_s = 0.0;
  o.settle_s = 0.0;
  int a = 0, b = 0;
  std::vector<int> order;
  const auto results = TimeInterleaved({[&] {
                                          ++a;
                                          order.push_back(0);
                                          return absl::OkStatus();
                                        },
                                        [&] {
                                          ++b;
                                          order.push_back(1);
                                          return absl::OkStatus();
                                        }},
                                       o);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok());
    EXPECT_GE(r->samples, 5);
    EXPECT_GE(r->median_us, r->min_us);
    EXPECT_GE(r->p90_us, r->median_us);
    EXPECT_FALSE(r->budget_hit);
  }
  EXPECT_GE(a, 5);
  EXPECT_GE(b, 5);
  // Both warm-ups come before any timed batch.
  EXPECT_EQ(order[0], 0);
  EXPECT_EQ(order[2], 1);
}

TEST(BenchTiming, BudgetStopsASlowContender) {
  TimingOptions o;
  o.min_reps = 1000;
  o.min_time_s = 100.0;
  o.budget_s = 0.03;
  o.settle_s = 0.0;
  int calls = 0;
  const auto results = TimeInterleaved(
      {[&] {
        ++calls;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return absl::OkStatus();
      }},
      o);
  ASSERT_TRUE(results[0].ok());
  EXPECT_TRUE(results[0]->budget_hit);
  EXPECT_GE(results[0]->samples, 1);
  EXPECT_LE(calls, 3);  // 20 ms each: the budget is spent after two
}

TEST(BenchTiming, ErrorsAreReturnedPerContender) {
  TimingOptions o;
  o.min_reps = 2;
  o.min_time_s = 0.0;
  o.settle_s = 0.0;
  const auto results =
      TimeInterleaved({[] { return absl::InternalError("boom"); },
                       [] { return absl::OkStatus(); }},
                      o);
  EXPECT_FALSE(results[0].ok());
  EXPECT_EQ(results[0].status().message(), "boom");
  EXPECT_TRUE(results[1].ok());
}

TEST(BenchTiming, MedianAndColdCopies) {
  std::vector<double> odd = {3, 1, 2};
  EXPECT_EQ(Median(odd), 2);
  std::vector<double> even = {4, 1, 3, 2};
  EXPECT_EQ(Median(even), 2.5);
  std::vector<double> none;
  EXPECT_EQ(Median(none), 0);
  EXPECT_EQ(ColdCopies(10 << 20, 32 << 20), 7);   // 70 MB > 64 MB
  EXPECT_EQ(ColdCopies(100 << 20, 32 << 20), 2);  // always at least two
  EXPECT_EQ(ColdCopies(1024, 32 << 20), 64);      // and at most 64
}

TEST(BenchRunner, TinyLayerEndToEnd) {
  LayersOptions config;
  config.preset = "custom";
  config.layers = {{"tiny", 48, 256, 64, true}};
  config.ms = {1, 5};
  config.threads = 2;
  config.timing.min_reps = 2;
  config.timing.min_time_s = 0.0;
  config.timing.settle_s = 0.0;
  config.roofline.samples = 1;
  config.roofline.seconds_per_sample = 0.001;
  config.cold_max_m = 1;
  std::vector<std::string> progress;
  absl::StatusOr<BenchReport> report = RunBench(
      {config}, [&](const std::string& line) { progress.push_back(line); });
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_FALSE(progress.empty());
  EXPECT_FALSE(report->any_failed());
  EXPECT_EQ(report->threads, 2);
  ASSERT_EQ(report->layers.size(), 2u);
  EXPECT_GT(report->layers[0].packed_bytes, 0);
  // 2 modes + 2 peers, at M = 1 and 5 hot and M = 1 cold.
  ASSERT_EQ(report->rows.size(), 12u);
  for (const BenchRow& row : report->rows) {
    const bool mode = row.impl == kImplW4a16 || row.impl == kImplDa8w4;
    if (mode) {
      EXPECT_EQ(row.status, RowStatus::kOk) << row.impl << " " << row.note;
      EXPECT_GT(row.time_us, 0.0);
      EXPECT_GT(row.gflops, 0.0);
      EXPECT_FALSE(row.kernel.empty());
      // A ceiling was timed interleaved with it (a column of its own);
      // the roofline figure is of the best ceiling of the run, so the
      // share of the same bound is at most the interleaved one.
      EXPECT_GT(row.ceiling_rate, 0.0);
      EXPECT_GT(row.interleaved_pct, 0.0);
      const double same_bound_us = row.ceiling_basis.rfind("peak ", 0) == 0
                                       ? row.compute_bound_us
                                       : row.memory_bound_us;
      EXPECT_GE(row.interleaved_pct,
                100 * same_bound_us / row.time_us * (1 - 1e-12))
          << row.ceiling_basis;
      EXPECT_FALSE(row.bound.empty());
    } else {
      EXPECT_NE(row.status, RowStatus::kFailed);
    }
    if (row.cold && row.ok()) {
      EXPECT_GE(row.cold_copies, 2) << row.impl;
    }
  }
  const nlohmann::json j = nlohmann::json::parse(ToJson(*report));
  EXPECT_EQ(j["rows"].size(), 12u);
  EXPECT_EQ(j["preset"], "custom");
}

TEST(BenchTiming, PercentileIsTheNearestRank) {
  std::vector<double> v = {5, 1, 4, 2, 3, 6, 7, 8, 9, 10};
  EXPECT_EQ(Percentile(v, 90), 9);
  EXPECT_EQ(Percentile(v, 50), 5);
  EXPECT_EQ(Percentile(v, 0), 1);
  EXPECT_EQ(Percentile(v, 100), 10);
  std::vector<double> empty;
  EXPECT_EQ(Percentile(empty, 90), 0);
}

}  // namespace
}  // namespace w4jit::perf
