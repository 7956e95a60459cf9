#include "perf/lib/bench_config.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "perf/lib/cli_args.h"
#include "perf/lib/sections/moe_bench.h"

namespace w4jit::perf {
namespace {

using flags::AddOption;

std::string Join(const std::vector<int64_t>& v) {
  return absl::StrJoin(v, ",");
}

void ApplyQuick(BenchConfig* c) {
  c->quick = true;
  c->ms = {1, 16};
  c->moe_tokens = {1, 16};
  c->timing.min_reps = 5;
  c->timing.min_time_s = 0.02;
  c->timing.budget_s = 0.5;
  c->cold_max_m = 1;
  c->roofline.samples = 3;
  c->roofline.seconds_per_sample = 0.02;
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

// --model's names: the dense presets and the MoE models.
absl::StatusOr<const ModelPreset*> ModelName(const std::string& text) {
  const ModelPreset* p = FindModelPreset(text);
  if (p == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown '", text, "' (have ", ModelPresetNames(), ")"));
  }
  return p;
}

absl::StatusOr<int64_t> GroupSize(const std::string& text) {
  absl::StatusOr<int64_t> g = flags::Integer(text);
  if (!g.ok() || (*g < 1 && *g != -1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("want a positive group or -1, got '", text, "'"));
  }
  return g;
}

absl::StatusOr<std::vector<int64_t>> PrefetchDistances(
    const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    absl::StatusOr<int64_t> d = flags::Integer(std::string(part));
    if (!d.ok() || *d < 0 || *d % 64 != 0 || *d > 16384) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", part, "' is not a multiple of 64 in [0, 16384]"));
    }
    out.push_back(*d);
  }
  return out;
}
// The Add...Options functions define the options of `w4jit bench` on
// `a`, each writing into *c, with `d`'s defaults in the help. The options'
// callbacks run in the order they are defined (cli/flags.h), whatever the order
// on the command line: --quick's smaller defaults first, so that explicit
// values override them; --preset before --shape, which replaces its
// layers. The checks that need several options run last.

// What to time: --quick, the layers, M, modes, peers, weights, threads.
void AddLayerOptions(CLI::App& a, const BenchConfig& d, BenchConfig* c) {
  a.add_flag_callback(
      "--quick", [c] { ApplyQuick(c); },
      "M=1,16, fewer samples, cold only at M=1; explicit options override");
  AddOption<const ModelPreset*>(a, "--preset", "NAME",
                                absl::StrCat("model layers: ", PresetNames()),
                                ParsePreset,
                                [c](const ModelPreset* p) {
                                  c->preset = p->name;
                                  c->layers = p->layers;
                                })
      ->default_str(d.preset);
  flags::AddRepeatedOption<LayerShape>(
      a, "--shape", "N,K[,G]",
      "a single layer instead of the preset's (repeatable; G default 128, "
      "-1 per-channel)",
      ParseShape, [c](std::vector<LayerShape> shapes) {
        c->preset = "custom";
        c->layers = std::move(shapes);
      });
  AddOption<std::vector<int64_t>>(
      a, "--m", "LIST",
      "rows of x to time; above 1024, an M where one call would take longer "
      "than --budget (from the smaller M) is not timed. With --moe the "
      "token counts (1,4,16,64,256 if not given), with --model the decode "
      "M (1,4,8,16 if not given; a MoE model's T: 1,4,16,64)",
      flags::PositiveIntegerList,
      [c](std::vector<int64_t> ms) {
        c->ms = ms;
        c->moe_tokens = std::move(ms);
      })
      ->default_str(Join(d.ms));
  AddOption<std::vector<Mode>>(a, "--modes", "w4a16,da8w4", "which w4jit modes",
                               ParseModes,
                               [c](std::vector<Mode> m) { c->modes = m; })
      ->default_str("w4a16,da8w4");
  AddOption<std::string>(a, "--peers", "onednn|none", "time oneDNN alongside",
                         flags::OneOf({"onednn", "none"}),
                         [c](std::string v) { c->peers = v == "onednn"; })
      ->default_str("onednn");
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
}

// How long to time: samples, time, budget, pauses, cold rows, the
// reference path's limit.
void AddTimingOptions(CLI::App& a, const BenchConfig& d, BenchConfig* c) {
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
  AddOption<int64_t>(
      a, "--cold-max-m", "M", "cold-cache rows for M up to this (0: none)",
      flags::NonNegativeInteger, [c](int64_t m) { c->cold_max_m = m; })
      ->default_str(absl::StrCat(d.cold_max_m));
  AddOption<double>(a, "--reference-max-macs", "X",
                    "time a layer on the reference path only up to X "
                    "multiply-adds per call (0: no limit)",
                    flags::NonNegativeNumber,
                    [c](double x) { c->reference_max_macs = x; })
      ->default_str("2^30");
}

// The sections beside the layers: --scaling, --moe, --act-order,
// --accuracy.
void AddSectionOptions(CLI::App& a, const BenchConfig& d, BenchConfig* c) {
  a.add_flag_callback(
      "--scaling", [c] { c->scaling = true; },
      "also time one layer at M=1 and M=256 on 1..T threads with each "
      "threading backend (pool, OpenMP) and print the parallel efficiency");
  AddOption<std::string>(a, "--scaling-layer", "NAME",
                         "the layer --scaling times (implies --scaling; "
                         "default: the first square one)",
                         flags::NonEmpty, [c](std::string name) {
                           c->scaling = true;
                           c->scaling_layer = std::move(name);
                         });
  AddOption<std::vector<std::string>>(
      a, "--moe", "MODEL,...",
      absl::StrCat("only the fused-MoE section for these models (",
                   MoePresetNames(),
                   ") at T = --m: moe.csv and the rows in bench.json"),
      MoeNames, [c](std::vector<std::string> m) { c->moe = std::move(m); });
  a.add_flag_callback(
      "--act-order", [c] { c->act_order = true; },
      "also time every layer and M with GPTQ act-order (g_idx permuting K) "
      "against the same layer without, interleaved (act_order.csv)");
  a.add_flag_callback(
      "--accuracy", [c] { c->accuracy = true; },
      "also measure every layer's relative L2 error against float64 (same "
      "int4 weights, x as given) on Gaussian rows with outlier channels, "
      "for W4A16 and DA8W4 per-token and per-group activation scales, timed "
      "interleaved at every M (accuracy.csv)");
  AddOption<int64_t>(
      a, "--outliers", "C", "outlier channels of K (implies --accuracy)",
      flags::NonNegativeInteger,
      [c](int64_t n) {
        c->accuracy = true;
        c->outliers = static_cast<int>(std::min<int64_t>(n, 1 << 30));
      })
      ->default_str(absl::StrCat(d.outliers));
  AddOption<double>(a, "--outlier-scale", "X",
                    "their magnitude over the rest (implies --accuracy)",
                    flags::NonNegativeNumber,
                    [c](double x) {
                      c->accuracy = true;
                      c->outlier_scale = static_cast<float>(x);
                    })
      ->default_str(absl::StrCat(d.outlier_scale));
  AddOption<int64_t>(a, "--accuracy-rows", "R",
                     "rows of x the error is measured on (implies --accuracy)",
                     flags::PositiveInteger,
                     [c](int64_t r) {
                       c->accuracy = true;
                       c->accuracy_rows =
                           static_cast<int>(std::min<int64_t>(r, 4096));
                     })
      ->default_str(absl::StrCat(d.accuracy_rows));
}

// The copies of the model that --model times side by side: --prefetch,
// --tunings, --hugepages (each needs `model`).
void AddModelCopyOptions(CLI::App& a, CLI::Option* model, BenchConfig* c) {
  CLI::Option* prefetch =
      AddOption<std::vector<int64_t>>(
          a, "--prefetch", "D,...",
          "one copy of the model per software prefetch distance in bytes "
          "(0: none; the kernels' prefetch_distance), timed interleaved; the "
          "copies replace any tuning file for the run (a tuning file can set "
          "prefetch_distance: give --tunings or this)",
          PrefetchDistances,
          [c](std::vector<int64_t> v) { c->model_prefetch = std::move(v); })
          ->needs(model);
  AddOption<std::vector<std::string>>(
      a, "--tunings", "F,...",
      "one copy of the model per tuning file (as `w4jit sweep` writes; "
      "default: none), timed interleaved: a tuning against the defaults",
      flags::NameList,
      [c](std::vector<std::string> v) { c->model_tunings = std::move(v); })
      ->needs(model)
      ->excludes(prefetch);
  AddOption<std::string>(
      a, "--hugepages", "off|on|both",
      "packed weights on 2 MB pages (LayerOptions::huge_pages) or not, or "
      "one copy of each, interleaved",
      flags::OneOf({"off", "on", "both", "off,on"}),
      [c](std::string v) {
        c->model_huge_pages = v == "off"  ? std::vector<bool>{false}
                              : v == "on" ? std::vector<bool>{true}
                                          : std::vector<bool>{false, true};
      })
      ->needs(model)
      ->default_str("off");
}

// --model, and how its steps run: layers, routing, parts, group, prefill
// M, steps, epilogues.
void AddModelOptions(CLI::App& a, const BenchConfig& d, BenchConfig* c) {
  CLI::Option* model = AddOption<const ModelPreset*>(
      a, "--model", "NAME",
      absl::StrCat(
          "instead of single layers, every linear layer of a whole model (",
          ModelPresetNames(),
          "), timed a decode step at a time through all layers "
          "(weights far beyond the L3: streamed from DRAM), both modes, "
          "interleaved with a plain streaming read of a DRAM-sized buffer. "
          "A MoE model (qwen3-30b-a3b, gpt-oss-20b, ...) runs its attention "
          "projections (qkv, o_proj) as linears and its experts as one fused "
          "MoE layer per decoder layer, routed afresh every step (the "
          "router's matmul left out), with the step's distinct experts' "
          "bytes and the mode's compute peak timed alongside. "
          "Writes model.csv. The options below need it"),
      ModelName, [c](const ModelPreset* p) { c->model = p->name; });
  AddOption<int64_t>(a, "--layers", "L",
                     "build only L decoder layers (default: all); checked "
                     "against MemAvailable",
                     flags::PositiveInteger,
                     [c](int64_t l) {
                       c->model_layers =
                           static_cast<int>(std::min<int64_t>(l, 1 << 20));
                     })
      ->needs(model);
  AddOption<std::string>(
      a, "--routing", "uniform|skewed",
      "a MoE model's routing, drawn afresh for every step and decoder "
      "layer from a seeded distribution: each token's top-k distinct "
      "experts uniformly, or skewed (expert 0 in every token)",
      flags::OneOf({"uniform", "skewed"}),
      [c](std::string v) { c->model_skewed = v == "skewed"; })
      ->needs(model)
      ->default_str("uniform");
  a.add_flag_callback(
       "--parts", [c] { c->model_parts = true; },
       "a MoE model's step also timed in parts, interleaved: its attention "
       "linears alone and its MoE layers alone (rows with part attention / "
       "moe)")
      ->needs(model);
  AddOption<int64_t>(a, "--group-size", "G",
                     "every layer's quantization group instead of the "
                     "preset's 128 (-1: per-channel)",
                     GroupSize, [c](int64_t g) { c->model_group_size = g; })
      ->needs(model);
  AddOption<std::vector<int64_t>>(
      a, "--prefill-m", "LIST", "also time prefill steps at these M",
      flags::PositiveIntegerList,
      [c](std::vector<int64_t> ms) { c->prefill_ms = std::move(ms); })
      ->needs(model);
  AddOption<int64_t>(
      a, "--steps", "N", "timed steps per mode and M, after 2 untimed",
      flags::PositiveInteger,
      [c](int64_t n) {
        c->model_steps = static_cast<int>(std::min<int64_t>(n, 100000));
      })
      ->needs(model)
      ->default_str(absl::StrCat(d.model_steps));
  AddOption<std::string>(
      a, "--epilogues", "plain|fused|both",
      "the linears alone, with the epilogues a host fuses (gate_up "
      "silu_mul, o_proj and down + residual), or both",
      flags::OneOf({"plain", "fused", "both"}),
      [c](std::string v) {
        c->model_variants = v == "both"
                                ? std::vector<std::string>{"plain", "fused"}
                                : std::vector<std::string>{v};
      })
      ->needs(model)
      ->default_str("both");
  AddModelCopyOptions(a, model, c);
}

// The checks after every option: what depends on --model.
void CheckModelOptions(const CLI::App& a, BenchConfig* c) {
  if (c->model.empty()) return;
  const ModelPreset* p = FindModelPreset(c->model);
  if (c->model_layers > p->num_layers) {
    throw CLI::ValidationError(
        "--layers", absl::StrCat(c->model_layers, " is more than ", p->name,
                                 "'s ", p->num_layers));
  }
  if (c->model_layers == 0) c->model_layers = p->num_layers;
  for (const LayerShape& s : p->layers) {
    if (c->model_group_size > 0 && s.k % c->model_group_size != 0) {
      throw CLI::ValidationError(
          "--group-size",
          absl::StrCat(c->model_group_size, " does not divide K = ", s.k,
                       " of ", p->name, "'s ", s.name));
    }
  }
  if (p->moe.has_value()) {
    const MoePreset& moe = *p->moe;
    for (int64_t k : {moe.hidden, moe.intermediate}) {
      if (c->model_group_size > 0 && k % c->model_group_size != 0) {
        throw CLI::ValidationError(
            "--group-size",
            absl::StrCat(c->model_group_size, " does not divide K = ", k,
                         " of ", p->name, "'s experts"));
      }
    }
    // --prefetch reaches the experts through an all-shapes tuning entry
    // (docs/tuning.md), --tunings through whatever its file holds; huge
    // pages would apply to the attention alone.
    if (c->model_huge_pages != std::vector<bool>{false}) {
      throw CLI::ValidationError(
          "--hugepages", absl::StrCat("not for the MoE model ", p->name,
                                      " (MoeLayer has no huge-page option)"));
    }
  } else if (a.count("--parts") > 0) {
    throw CLI::ValidationError("--parts",
                               absl::StrCat(p->name, " is not a MoE model"));
  } else if (a.count("--routing") > 0) {
    throw CLI::ValidationError("--routing",
                               absl::StrCat(p->name, " is not a MoE model"));
  }
  if (a.count("--m") == 0) {
    c->ms = p->moe.has_value() ? std::vector<int64_t>{1, 4, 16, 64}
                               : std::vector<int64_t>{1, 4, 8, 16};
  }
}

// Every option of `w4jit bench` on a new app that writes into *c.
std::unique_ptr<CLI::App> BenchApp(BenchConfig* c) {
  const BenchConfig d;  // the defaults the help shows
  auto app = flags::NewApp(
      "w4jit bench",
      "Measures this machine's roofline (compute peaks of the instructions "
      "the kernels use, read bandwidth at each footprint), checks every "
      "w4jit kernel against the reference, then times W4A16 and DA8W4 "
      "layers and oneDNN's dense bf16 and u8s8 matmuls on the same shapes, "
      "interleaved. Writes bench.csv, bench.json, bench.txt, roofline.svg, "
      "speedup.svg and, with those sections, scaling.csv, act_order.csv, "
      "accuracy.csv and model.csv. Exit code 1 if a kernel is wrong.");
  CLI::App& a = *app;
  AddLayerOptions(a, d, c);
  AddTimingOptions(a, d, c);
  AddSectionOptions(a, d, c);
  AddModelOptions(a, d, c);
  AddOption<std::string>(a, "--out", "DIR", "output directory", flags::NonEmpty,
                         [c](std::string dir) { c->out_dir = std::move(dir); })
      ->default_str(d.out_dir);
  // After every option: what depends on --model.
  a.callback([c, &a] { CheckModelOptions(a, c); });
  return app;
}

}  // namespace

absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, const char* const* argv) {
  BenchConfig c;
  c.layers = FindPreset(c.preset)->layers;
  std::unique_ptr<CLI::App> app = BenchApp(&c);
  absl::StatusOr<bool> help = flags::Parse(*app, argc, argv);
  if (!help.ok()) return help.status();
  if (*help) {
    BenchConfig h;
    h.help = true;
    return h;
  }
  return c;
}

std::string BenchUsage() {
  BenchConfig unused;
  return BenchApp(&unused)->help();
}

}  // namespace w4jit::perf
