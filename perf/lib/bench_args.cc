#include "perf/lib/bench_args.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "perf/lib/bench_legacy.h"
#include "perf/lib/cli_args.h"
#include "perf/lib/model_args.h"
#include "perf/lib/sections/moe_bench.h"

namespace w4jit::perf {

const BenchCommon& Common(const BenchJob& job) {
  return std::visit([](const auto& o) -> const BenchCommon& { return o; }, job);
}

namespace {

using flags::AddOption;

std::string Join(const std::vector<int64_t>& v) {
  return absl::StrJoin(v, ",");
}

absl::StatusOr<std::vector<std::string>> MoeNames(const std::string& text) {
  std::vector<std::string> names = absl::StrSplit(text, ',', absl::SkipEmpty());
  if (names.empty()) return absl::InvalidArgumentError("empty");
  for (const std::string& name : names) {
    if (FindMoePreset(name) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown '", name, "' (have ", MoePresetNames(), ")"));
    }
  }
  return names;
}

}  // namespace

std::unique_ptr<CLI::App> NewBenchJobApp(const std::string& job,
                                         const std::string& description,
                                         BenchCommon* c,
                                         std::function<void()> quick_more,
                                         const std::string& quick_help) {
  auto app = flags::NewApp("w4jit bench " + job, description);
  CLI::App& a = *app;
  const BenchCommon d;
  a.add_flag_callback(
      "--quick",
      [c, quick_more = std::move(quick_more)] {
        c->quick = true;
        c->timing.min_reps = 5;
        c->timing.min_time_s = 0.02;
        c->timing.budget_s = 0.5;
        c->roofline.samples = 3;
        c->roofline.seconds_per_sample = 0.02;
        if (quick_more) quick_more();
      },
      absl::StrCat("fewer samples", quick_help, "; explicit options override"));
  AddOption<std::vector<Mode>>(a, "--modes", "w4a16,da8w4", "which w4jit modes",
                               ParseModes,
                               [c](std::vector<Mode> m) { c->modes = m; })
      ->default_str("w4a16,da8w4");
  AddOption<std::string>(
      a, "--weights", "s4|u4", "symmetric, or asymmetric with zero points",
      flags::OneOf({"s4", "u4"}),
      [c](std::string v) {
        c->weight_type = v == "s4" ? WeightType::kS4 : WeightType::kU4;
      })
      ->default_str("s4");
  AddOption<int64_t>(a, "--threads", "T",
                     "threads for w4jit, oneDNN and the peaks (0: all cores)",
                     flags::NonNegativeInteger,
                     [c](int64_t t) {
                       c->threads =
                           static_cast<int>(std::min<int64_t>(t, 1 << 20));
                     })
      ->default_str("0");
  AddOption<int64_t>(a, "--reps", "N", "samples per figure",
                     flags::NonNegativeInteger,
                     [c](int64_t n) {
                       c->timing.min_reps =
                           static_cast<int>(std::clamp<int64_t>(n, 1, 1 << 30));
                     })
      ->default_str(absl::StrCat(d.timing.min_reps));
  AddOption<double>(a, "--min-time", "S", "and at least S seconds of them",
                    flags::NonNegativeNumber,
                    [c](double s) { c->timing.min_time_s = s; })
      ->default_str(absl::StrCat(d.timing.min_time_s));
  AddOption<double>(a, "--budget", "S", "but at most S seconds per figure",
                    flags::NonNegativeNumber,
                    [c](double s) { c->timing.budget_s = s; })
      ->default_str(absl::StrCat(d.timing.budget_s));
  AddOption<double>(a, "--settle", "S",
                    "pause before each timed batch, so that oneDNN's OpenMP "
                    "threads stop spinning",
                    flags::NonNegativeNumber,
                    [c](double s) { c->timing.settle_s = s; })
      ->default_str(absl::StrCat(d.timing.settle_s));
  AddOption<std::string>(
      a, "--out", "DIR", "output directory (bench.json, bench.txt)",
      flags::NonEmpty, [c](std::string dir) { c->out_dir = std::move(dir); })
      ->default_str(d.out_dir);
  return app;
}

namespace {

// --preset and --shape (defined in this order: --shape replaces the
// preset's layers).
void AddLayerSetOptions(CLI::App& a, LayerSetOptions* c) {
  AddOption<const ModelPreset*>(a, "--preset", "NAME",
                                absl::StrCat("model layers: ", PresetNames()),
                                ParsePreset,
                                [c](const ModelPreset* p) {
                                  c->preset = p->name;
                                  c->layers = p->layers;
                                })
      ->default_str(c->preset);
  flags::AddRepeatedOption<LayerShape>(
      a, "--shape", "N,K[,G]",
      "a single layer instead of the preset's (repeatable; G default 128, "
      "-1 per-channel)",
      ParseShape, [c](std::vector<LayerShape> shapes) {
        c->preset = "custom";
        c->layers = std::move(shapes);
      });
}

CLI::Option* AddMs(CLI::App& a, std::vector<int64_t>* ms,
                   const std::string& help) {
  return AddOption<std::vector<int64_t>>(
             a, "--m", "LIST", help, flags::PositiveIntegerList,
             [ms](std::vector<int64_t> v) { *ms = std::move(v); })
      ->default_str(Join(*ms));
}

std::unique_ptr<CLI::App> LayersApp(LayersOptions* c) {
  auto app = NewBenchJobApp(
      "layers",
      "Measures this machine's roofline (compute peaks of the instructions "
      "the kernels use, read bandwidth at each footprint), checks every "
      "w4jit kernel against the reference, then times W4A16 and DA8W4 "
      "layers and oneDNN's dense bf16 and u8s8 matmuls on the same shapes, "
      "interleaved. Writes bench.json and bench.txt (`python3 -m "
      "w4jit.report` draws and tabulates them). Exit code 1 if a kernel is "
      "wrong.",
      c,
      [c] {
        c->ms = {1, 16};
        c->cold_max_m = 1;
      },
      ", M=1,16, cold only at M=1");
  CLI::App& a = *app;
  AddLayerSetOptions(a, c);
  AddMs(a, &c->ms,
        "rows of x to time; above 1024, an M where one call would take "
        "longer than --budget (from the smaller M) is not timed");
  AddOption<std::string>(a, "--peers", "onednn|none", "time oneDNN alongside",
                         flags::OneOf({"onednn", "none"}),
                         [c](std::string v) { c->peers = v == "onednn"; })
      ->default_str("onednn");
  AddOption<int64_t>(
      a, "--cold-max-m", "M", "cold-cache rows for M up to this (0: none)",
      flags::NonNegativeInteger, [c](int64_t m) { c->cold_max_m = m; })
      ->default_str(absl::StrCat(c->cold_max_m));
  AddOption<double>(a, "--reference-max-macs", "X",
                    "time a layer on the reference path only up to X "
                    "multiply-adds per call (0: no limit)",
                    flags::NonNegativeNumber,
                    [c](double x) { c->reference_max_macs = x; })
      ->default_str("2^30");
  a.add_flag_callback(
      "--act-order", [c] { c->act_order = true; },
      "also time every layer and M with GPTQ act-order (g_idx permuting K) "
      "against the same layer without, interleaved");
  return app;
}

std::unique_ptr<CLI::App> ScalingApp(ScalingOptions* c) {
  auto app = NewBenchJobApp(
      "scaling",
      "Times one layer at M=1 and M=256 on 1..T threads with each threading "
      "backend (pool, OpenMP); w4jit.report derives the parallel efficiency.",
      c, nullptr, "");
  AddLayerSetOptions(*app, c);
  AddOption<std::string>(
      *app, "--layer", "NAME",
      "which of the layers (default: the first square one, else the first)",
      flags::NonEmpty, [c](std::string name) { c->layer = std::move(name); });
  return app;
}

std::unique_ptr<CLI::App> AccuracyApp(AccuracyOptions* c) {
  auto app = NewBenchJobApp(
      "accuracy",
      "Measures every layer's relative L2 error against float64 (same int4 "
      "weights, x as given) on Gaussian rows with outlier channels, for "
      "W4A16 and DA8W4 per-token and per-group activation scales, timed "
      "interleaved at every M.",
      c,
      [c] {
        c->ms = {1, 16};
      },
      ", M=1,16");
  CLI::App& a = *app;
  AddLayerSetOptions(a, c);
  AddMs(a, &c->ms, "rows of x to time");
  AddOption<int64_t>(
      a, "--outliers", "C", "outlier channels of K", flags::NonNegativeInteger,
      [c](int64_t n) {
        c->outliers = static_cast<int>(std::min<int64_t>(n, 1 << 30));
      })
      ->default_str(absl::StrCat(c->outliers));
  AddOption<double>(a, "--outlier-scale", "X", "their magnitude over the rest",
                    flags::NonNegativeNumber,
                    [c](double x) { c->outlier_scale = static_cast<float>(x); })
      ->default_str(absl::StrCat(c->outlier_scale));
  AddOption<int64_t>(a, "--rows", "R", "rows of x the error is measured on",
                     flags::PositiveInteger,
                     [c](int64_t r) {
                       c->accuracy_rows =
                           static_cast<int>(std::min<int64_t>(r, 4096));
                     })
      ->default_str(absl::StrCat(c->accuracy_rows));
  return app;
}

std::unique_ptr<CLI::App> MoeApp(MoeOptions* c) {
  auto app = NewBenchJobApp(
      "moe",
      "Times a fused MoE layer (MoeLayer) of each model per mode, routing "
      "and token count, checked against float64 first, beside the loop of "
      "per-expert Layer calls a host would write, against the read "
      "bandwidth at the touched experts' footprint and the mode's compute "
      "peak.",
      c,
      [c] {
        c->tokens = {1, 16};
      },
      ", T=1,16");
  AddOption<std::vector<std::string>>(
      *app, "--models", "MODEL,...",
      absl::StrCat("the MoE layers: ", MoePresetNames()), MoeNames,
      [c](std::vector<std::string> m) { c->presets = std::move(m); })
      ->default_str(absl::StrJoin(c->presets, ","));
  AddOption<std::vector<int64_t>>(
      *app, "--tokens", "LIST", "tokens per call", flags::PositiveIntegerList,
      [c](std::vector<int64_t> t) { c->tokens = std::move(t); })
      ->default_str(Join(c->tokens));
  return app;
}

struct JobEntry {
  const char* name;
  const char* help;
};

constexpr JobEntry kJobs[] = {
    {"layers", "single layers against the roofline and oneDNN"},
    {"scaling", "one layer on 1..T threads, each threading backend"},
    {"accuracy", "error and time of W4A16 and DA8W4 activation scales"},
    {"model", "every linear layer of a whole model, step by step"},
    {"moe", "a fused MoE layer per model, mode and token count"},
};

std::unique_ptr<CLI::App> JobsApp() {
  auto app = flags::NewApp(
      "w4jit bench",
      "Checks and times w4jit kernels: one job per run, each with its own "
      "options. `w4jit bench <job> --help` for a job's options. The JSON it "
      "writes is drawn and tabulated by `python3 -m w4jit.report`.");
  app->require_subcommand(0, 1);
  for (const JobEntry& j : kJobs) {
    app->add_subcommand(j.name, j.help)->prefix_command();
  }
  return app;
}

}  // namespace

const std::vector<std::string>& BenchJobNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const JobEntry& j : kJobs) v.push_back(j.name);
    return v;
  }();
  return names;
}

std::unique_ptr<CLI::App> BenchJobApp(const std::string& name, BenchJob* job) {
  if (name == "layers") return LayersApp(&job->emplace<LayersOptions>());
  if (name == "scaling") return ScalingApp(&job->emplace<ScalingOptions>());
  if (name == "accuracy") return AccuracyApp(&job->emplace<AccuracyOptions>());
  if (name == "model") return ModelApp(&job->emplace<ModelOptions>());
  if (name == "moe") return MoeApp(&job->emplace<MoeOptions>());
  return nullptr;
}

absl::StatusOr<BenchArgs> ParseBenchArgs(std::vector<std::string> args) {
  if (args.empty() ||
      (args[0].rfind("-", 0) == 0 && args[0] != "-h" && args[0] != "--help")) {
    return ParseOldBenchArgs(std::move(args));
  }
  BenchArgs out;
  std::unique_ptr<CLI::App> jobs = JobsApp();
  absl::StatusOr<bool> help = flags::Parse(*jobs, args);
  if (!help.ok()) return help.status();
  if (*help) {
    out.help = jobs->help();
    return out;
  }
  for (const JobEntry& j : kJobs) {
    CLI::App* sub = jobs->get_subcommand(j.name);
    if (!sub->parsed()) continue;
    BenchJob job;
    std::unique_ptr<CLI::App> app = BenchJobApp(j.name, &job);
    absl::StatusOr<bool> job_help = flags::Parse(*app, sub->remaining());
    if (!job_help.ok()) return job_help.status();
    if (*job_help) {
      out.help = app->help();
    } else {
      out.jobs.push_back(std::move(job));
    }
    return out;
  }
  return absl::InvalidArgumentError("no job (see w4jit bench --help)");
}

absl::StatusOr<BenchArgs> ParseBenchArgs(int argc, const char* const* argv) {
  return ParseBenchArgs(std::vector<std::string>(argv, argv + argc));
}

std::string BenchUsage(const std::string& job) {
  if (job.empty()) return JobsApp()->help();
  BenchJob unused;
  std::unique_ptr<CLI::App> app = BenchJobApp(job, &unused);
  return app ? app->help() : "";
}

}  // namespace w4jit::perf
