#include "perf/lib/bench_runner.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "perf/lib/onednn_peer.h"
#include "perf/lib/report/row_metrics.h"
#include "perf/lib/sections/accuracy_bench.h"
#include "perf/lib/sections/act_order_bench.h"
#include "perf/lib/sections/layer_bench.h"
#include "perf/lib/sections/model_bench.h"
#include "perf/lib/sections/scaling_bench.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::perf {

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

BenchReport NewReport(const BenchConfig& config) {
  BenchReport report;
  report.threads = GetNumThreads();
  report.w4jit_version = Version();
  report.onednn_version = OneDnnVersion();
  report.date_utc = UtcNow();
  report.preset = config.preset;
  report.wait_policy = DescribeWaitPolicy(config.timing);
  report.cpu = internal::HostCpu();
  report.ms = config.ms;
  report.min_time_s = config.timing.min_time_s;
  report.reps = config.timing.min_reps;
  return report;
}

absl::StatusOr<BenchReport> RunBench(const BenchConfig& config,
                                     const ProgressFn& progress,
                                     const ProgressFn& status_line) {
  const ProgressFn say = progress ? progress : [](const std::string&) {};
  SetNumThreads(config.threads);
  BenchReport report = NewReport(config);
  SetOneDnnThreads(report.threads);
  for (Mode m : config.modes) {
    report.impls.push_back(m == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4);
  }
  if (config.peers) {
    report.impls.push_back(kImplOneDnnBf16);
    report.impls.push_back(kImplOneDnnU8s8);
  }
  if (!config.model.empty()) {
    // A whole model instead of single layers: its own ceiling (the read
    // timed alongside), no per-layer rows.
    report.preset = config.model;
    report.impls.clear();
    if (absl::Status s = RunModelBench(config, say, status_line, &report);
        !s.ok()) {
      return s;
    }
    return report;
  }

  say(
      absl::StrFormat("measuring compute peaks and read bandwidth on %d "
                      "thread(s)...",
                      report.threads));
  absl::StatusOr<Roofline> roof = MeasureRoofline(config.roofline);
  if (!roof.ok()) return roof.status();
  report.roofline = *std::move(roof);

  for (const LayerShape& shape : config.layers) {
    if (absl::Status s = BenchOneLayer(config, shape, say, &report); !s.ok()) {
      return s;
    }
  }
  say("measuring the ceilings again (the higher figure is kept)...");
  if (absl::Status s = RemeasureKeepingBest(config.roofline, &report.roofline);
      !s.ok()) {
    return s;
  }
  FoldInterleavedCeilings(report.rows, &report.roofline);
  for (BenchRow& row : report.rows) FillRowMetrics(report.roofline, &row);
  FillSpeedups(&report.rows);
  if (config.scaling) {
    if (absl::Status s = RunScaling(config, say, &report); !s.ok()) return s;
  }
  if (config.act_order) {
    if (absl::Status s = RunActOrder(config, say, &report); !s.ok()) return s;
  }
  if (config.accuracy) {
    if (absl::Status s = RunAccuracy(config, say, &report); !s.ok()) return s;
  }
  return report;
}

}  // namespace w4jit::perf
