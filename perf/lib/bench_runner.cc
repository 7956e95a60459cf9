#include "perf/lib/bench_runner.h"

#include <ctime>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "perf/lib/onednn_peer.h"
#include "perf/lib/report/row_metrics.h"
#include "perf/lib/sections/accuracy_bench.h"
#include "perf/lib/sections/act_order_bench.h"
#include "perf/lib/sections/layer_bench.h"
#include "perf/lib/sections/model_bench.h"
#include "perf/lib/sections/moe_bench.h"
#include "perf/lib/sections/scaling_bench.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::perf {
namespace {

// The name the report's header gives the job's subject, and its M.
struct Subject {
  std::string preset;
  std::vector<int64_t> ms;
};

Subject SubjectOf(const BenchJob& job) {
  struct Visitor {
    Subject operator()(const LayersOptions& o) { return {o.preset, o.ms}; }
    Subject operator()(const ScalingOptions& o) { return {o.preset, {}}; }
    Subject operator()(const AccuracyOptions& o) { return {o.preset, o.ms}; }
    Subject operator()(const ModelOptions& o) { return {o.model, o.ms}; }
    Subject operator()(const MoeOptions& o) {
      return {absl::StrJoin(o.presets, ","), o.tokens};
    }
  };
  return std::visit(Visitor{}, job);
}

absl::Status RunLayers(const LayersOptions& config, const ProgressFn& say,
                       BenchReport* report) {
  for (Mode m : config.modes) {
    report->impls.push_back(m == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4);
  }
  if (config.peers) {
    report->impls.push_back(kImplOneDnnBf16);
    report->impls.push_back(kImplOneDnnU8s8);
  }
  say(absl::StrFormat(
      "measuring compute peaks and read bandwidth on %d thread(s)...",
      report->threads));
  absl::StatusOr<Roofline> roof = MeasureRoofline(config.roofline);
  if (!roof.ok()) return roof.status();
  report->roofline = *std::move(roof);
  for (const LayerShape& shape : config.layers) {
    if (absl::Status s = BenchOneLayer(config, shape, say, report); !s.ok()) {
      return s;
    }
  }
  say("measuring the ceilings again (the higher figure is kept)...");
  if (absl::Status s = RemeasureKeepingBest(config.roofline, &report->roofline);
      !s.ok()) {
    return s;
  }
  FoldInterleavedCeilings(report->rows, &report->roofline);
  for (BenchRow& row : report->rows) FillRowMetrics(report->roofline, &row);
  if (config.act_order) return RunActOrder(config, say, report);
  return absl::OkStatus();
}

absl::Status RunMoe(const MoeOptions& config, const ProgressFn& say,
                    BenchReport* report) {
  absl::StatusOr<std::vector<MoeBenchRow>> rows = RunMoeBench(config, say);
  if (!rows.ok()) return rows.status();
  report->moe = *std::move(rows);
  return absl::OkStatus();
}

}  // namespace

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

BenchReport NewReport(const BenchJob& job) {
  const BenchCommon& common = Common(job);
  SetNumThreads(common.threads);
  Subject subject = SubjectOf(job);
  BenchReport report;
  report.threads = GetNumThreads();
  report.w4jit_version = Version();
  report.onednn_version = OneDnnVersion();
  report.date_utc = UtcNow();
  report.preset = std::move(subject.preset);
  report.wait_policy = DescribeWaitPolicy(common.timing);
  report.cpu = internal::HostCpu();
  report.ms = std::move(subject.ms);
  report.min_time_s = common.timing.min_time_s;
  report.reps = common.timing.min_reps;
  return report;
}

absl::StatusOr<BenchReport> RunBench(const std::vector<BenchJob>& jobs,
                                     const ProgressFn& progress,
                                     const ProgressFn& status_line) {
  if (jobs.empty()) return absl::InvalidArgumentError("no job");
  const ProgressFn say = progress ? progress : [](const std::string&) {};
  BenchReport report = NewReport(jobs.front());
  for (const BenchJob& job : jobs) {
    SetNumThreads(Common(job).threads);
    SetOneDnnThreads(GetNumThreads());
    absl::Status s;
    if (const auto* o = std::get_if<LayersOptions>(&job)) {
      s = RunLayers(*o, say, &report);
    } else if (const auto* o = std::get_if<ScalingOptions>(&job)) {
      s = RunScaling(*o, say, &report);
    } else if (const auto* o = std::get_if<AccuracyOptions>(&job)) {
      s = RunAccuracy(*o, say, &report);
    } else if (const auto* o = std::get_if<ModelOptions>(&job)) {
      s = RunModelBench(*o, say, status_line, &report);
    } else {
      s = RunMoe(std::get<MoeOptions>(job), say, &report);
    }
    if (!s.ok()) return s;
  }
  return report;
}

}  // namespace w4jit::perf
