#include "perf/lib/model_args.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "perf/lib/bench_args.h"

namespace w4jit::perf {
namespace {

using flags::AddOption;

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

// The copies of the model timed side by side: --prefetch, --tunings,
// --hugepages.
void AddCopyOptions(CLI::App& a, ModelOptions* c) {
  CLI::Option* prefetch = AddOption<std::vector<int64_t>>(
      a, "--prefetch", "D,...",
      "one copy of the model per software prefetch distance in bytes "
      "(0: none; the kernels' prefetch_distance), timed interleaved; the "
      "copies replace any tuning file for the run (a tuning file can set "
      "prefetch_distance: give --tunings or this)",
      PrefetchDistances,
      [c](std::vector<int64_t> v) { c->model_prefetch = std::move(v); });
  AddOption<std::vector<std::string>>(
      a, "--tunings", "F,...",
      "one copy of the model per tuning file (as `w4jit sweep` writes; "
      "default: none), timed interleaved: a tuning against the defaults",
      flags::NameList,
      [c](std::vector<std::string> v) { c->model_tunings = std::move(v); })
      ->excludes(prefetch);
  AddOption<std::string>(
      a, "--hugepages", "off|on|both",
      "packed weights on 2 MB pages (LayerOptions::huge_pages) or not, or "
      "one copy of each, interleaved (a dense model only)",
      flags::OneOf({"off", "on", "both", "off,on"}),
      [c](std::string v) {
        c->model_huge_pages = v == "off"  ? std::vector<bool>{false}
                              : v == "on" ? std::vector<bool>{true}
                                          : std::vector<bool>{false, true};
      })
      ->default_str("off");
}

// How the steps run: layers, routing, parts, group, prefill M, steps,
// epilogues.
void AddStepOptions(CLI::App& a, ModelOptions* c) {
  AddOption<int64_t>(a, "--layers", "L",
                     "build only L decoder layers (default: all); checked "
                     "against MemAvailable",
                     flags::PositiveInteger, [c](int64_t l) {
                       c->model_layers =
                           static_cast<int>(std::min<int64_t>(l, 1 << 20));
                     });
  AddOption<std::string>(
      a, "--routing", "uniform|skewed",
      "a MoE model's routing, drawn afresh for every step and decoder "
      "layer from a seeded distribution: each token's top-k distinct "
      "experts uniformly, or skewed (expert 0 in every token)",
      flags::OneOf({"uniform", "skewed"}),
      [c](std::string v) { c->model_skewed = v == "skewed"; })
      ->default_str("uniform");
  a.add_flag_callback(
      "--parts", [c] { c->model_parts = true; },
      "a MoE model's step also timed in parts, interleaved: its attention "
      "linears alone and its MoE layers alone (rows with part attention / "
      "moe)");
  AddOption<int64_t>(a, "--group-size", "G",
                     "every layer's quantization group instead of the "
                     "preset's 128 (-1: per-channel)",
                     GroupSize, [c](int64_t g) { c->model_group_size = g; });
  AddOption<std::vector<int64_t>>(
      a, "--prefill-m", "LIST", "also time prefill steps at these M",
      flags::PositiveIntegerList,
      [c](std::vector<int64_t> ms) { c->prefill_ms = std::move(ms); });
  AddOption<int64_t>(
      a, "--steps", "N", "timed steps per mode and M, after 2 untimed",
      flags::PositiveInteger,
      [c](int64_t n) {
        c->model_steps = static_cast<int>(std::min<int64_t>(n, 100000));
      })
      ->default_str(absl::StrCat(c->model_steps));
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
      ->default_str("both");
}

void CheckGroup(const ModelOptions& c, const std::string& model, int64_t k,
                const std::string& what) {
  if (c.model_group_size > 0 && k % c.model_group_size != 0) {
    throw CLI::ValidationError(
        "--group-size",
        absl::StrCat(c.model_group_size, " does not divide K = ", k, " of ",
                     model, "'s ", what));
  }
}

// The values against the model named, after every option.
void ResolveModelOptions(const CLI::App& a, ModelOptions* c) {
  const ModelPreset* p = FindModelPreset(c->model);
  if (c->model_layers > p->num_layers) {
    throw CLI::ValidationError(
        "--layers", absl::StrCat(c->model_layers, " is more than ", p->name,
                                 "'s ", p->num_layers));
  }
  if (c->model_layers == 0) c->model_layers = p->num_layers;
  for (const LayerShape& s : p->layers) CheckGroup(*c, p->name, s.k, s.name);
  if (p->moe.has_value()) {
    CheckGroup(*c, p->name, p->moe->hidden, "experts");
    CheckGroup(*c, p->name, p->moe->intermediate, "experts");
    // --prefetch reaches the experts through an all-shapes tuning entry
    // (docs/tuning.md), --tunings through whatever its file holds; huge
    // pages would apply to the attention alone.
    if (c->model_huge_pages != std::vector<bool>{false}) {
      throw CLI::ValidationError(
          "--hugepages", absl::StrCat("not for the MoE model ", p->name,
                                      " (MoeLayer has no huge-page option)"));
    }
  } else {
    for (const char* moe_only : {"--parts", "--routing"}) {
      if (a.count(moe_only) > 0) {
        throw CLI::ValidationError(
            moe_only, absl::StrCat(p->name, " is not a MoE model"));
      }
    }
  }
  if (c->ms.empty()) {
    c->ms = p->moe.has_value() ? std::vector<int64_t>{1, 4, 16, 64}
                               : std::vector<int64_t>{1, 4, 8, 16};
  }
}

}  // namespace

std::unique_ptr<CLI::App> ModelApp(ModelOptions* c) {
  auto app = NewBenchJobApp(
      "model",
      "Every linear layer of a whole model, timed a decode step at a time "
      "through all layers (weights far beyond the L3: streamed from DRAM), "
      "each mode, interleaved with a plain streaming read of a DRAM-sized "
      "buffer. A MoE model runs its attention projections (qkv, o_proj) as "
      "linears and its experts as one fused MoE layer per decoder layer, "
      "routed afresh every step (the router's matmul left out), with the "
      "step's distinct experts' bytes and the mode's compute peak timed "
      "alongside.",
      c, nullptr, "");
  CLI::App& a = *app;
  AddOption<const ModelPreset*>(
      a, "--model", "NAME", absl::StrCat("the model: ", ModelPresetNames()),
      ModelName, [c](const ModelPreset* p) { c->model = p->name; })
      ->required();
  AddOption<std::vector<int64_t>>(
      a, "--m", "LIST",
      "decode M (a MoE model's tokens T) per step (default 1,4,8,16; a MoE "
      "model's 1,4,16,64)",
      flags::PositiveIntegerList,
      [c](std::vector<int64_t> ms) { c->ms = std::move(ms); });
  AddStepOptions(a, c);
  AddCopyOptions(a, c);
  a.callback([c, &a] { ResolveModelOptions(a, c); });
  return app;
}

}  // namespace w4jit::perf
