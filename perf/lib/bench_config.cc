#include "perf/lib/bench_config.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "perf/lib/cli_args.h"

namespace w4jit::perf {
namespace {

absl::Status ParseNumber(const std::string& name, const std::string& value,
                         double* out) {
  if (!absl::SimpleAtod(value, out) || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", value, "' is not a non-negative number"));
  }
  return absl::OkStatus();
}

absl::Status ParseCount(const std::string& name, const std::string& value,
                        int64_t* out) {
  if (!absl::SimpleAtoi(value, out) || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", value, "' is not a non-negative integer"));
  }
  return absl::OkStatus();
}

// Applies one --name=value option.
absl::Status Apply(const std::string& name, const std::string& value,
                   BenchConfig* c) {
  double d = 0.0;
  int64_t i = 0;
  absl::Status s;
  if (name == "--preset") {
    const ModelPreset* p = FindPreset(value);
    if (p == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--preset: unknown '", value, "' (have ", PresetNames(), ")"));
    }
    c->preset = p->name;
    c->layers = p->layers;
  } else if (name == "--shape") {
    absl::StatusOr<LayerShape> shape = ParseShape(name, value);
    if (!shape.ok()) return shape.status();
    // The first --shape replaces the preset, later ones add layers.
    if (c->preset != "custom") c->layers.clear();
    c->preset = "custom";
    c->layers.push_back(*shape);
  } else if (name == "--m") {
    absl::StatusOr<std::vector<int64_t>> ms = ParsePositiveList(name, value);
    if (!ms.ok()) return ms.status();
    c->ms = *ms;
    c->moe_tokens = *ms;
  } else if (name == "--moe") {
    c->moe = absl::StrSplit(value, ',', absl::SkipEmpty());
    if (c->moe.empty()) return absl::InvalidArgumentError("--moe: empty");
  } else if (name == "--modes") {
    absl::StatusOr<std::vector<Mode>> modes = ParseModes(name, value);
    if (!modes.ok()) return modes.status();
    c->modes = *modes;
  } else if (name == "--peers") {
    if (value != "onednn" && value != "none") {
      return absl::InvalidArgumentError("--peers: want onednn or none");
    }
    c->peers = value == "onednn";
  } else if (name == "--weights") {
    if (value != "s4" && value != "u4") {
      return absl::InvalidArgumentError("--weights: want s4 or u4");
    }
    c->weight_type = value == "s4" ? WeightType::kS4 : WeightType::kU4;
  } else if (name == "--threads") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    c->threads = static_cast<int>(i);
  } else if (name == "--reps") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    c->timing.min_reps = static_cast<int>(std::max<int64_t>(1, i));
  } else if (name == "--min-time") {
    if (!(s = ParseNumber(name, value, &d)).ok()) return s;
    c->timing.min_time_s = d;
  } else if (name == "--budget") {
    if (!(s = ParseNumber(name, value, &d)).ok()) return s;
    c->timing.budget_s = d;
  } else if (name == "--settle") {
    if (!(s = ParseNumber(name, value, &d)).ok()) return s;
    c->timing.settle_s = d;
  } else if (name == "--cold-max-m") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    c->cold_max_m = i;
  } else if (name == "--reference-max-macs") {
    if (!(s = ParseNumber(name, value, &d)).ok()) return s;
    c->reference_max_macs = d;
  } else if (name == "--scaling-layer") {
    if (value.empty()) {
      return absl::InvalidArgumentError("--scaling-layer: empty");
    }
    c->scaling = true;
    c->scaling_layer = value;
  } else if (name == "--outliers") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    c->accuracy = true;
    c->outliers = static_cast<int>(std::min<int64_t>(i, 1 << 30));
  } else if (name == "--outlier-scale") {
    if (!(s = ParseNumber(name, value, &d)).ok()) return s;
    c->accuracy = true;
    c->outlier_scale = static_cast<float>(d);
  } else if (name == "--accuracy-rows") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    if (i < 1) {
      return absl::InvalidArgumentError("--accuracy-rows: want at least 1");
    }
    c->accuracy = true;
    c->accuracy_rows = static_cast<int>(std::min<int64_t>(i, 4096));
  } else if (name == "--model") {
    const ModelPreset* p = FindPreset(value);
    if (p == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--model: unknown '", value, "' (have ", PresetNames(), ")"));
    }
    c->model = p->name;
  } else if (name == "--group-size") {
    if (!absl::SimpleAtoi(value, &i) || (i < 1 && i != -1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--group-size: want a positive group or -1, got '", value, "'"));
    }
    c->model_group_size = i;
  } else if (name == "--layers") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    if (i == 0) return absl::InvalidArgumentError("--layers: want >= 1");
    c->model_layers = static_cast<int>(std::min<int64_t>(i, 1 << 20));
  } else if (name == "--prefill-m") {
    absl::StatusOr<std::vector<int64_t>> ms = ParsePositiveList(name, value);
    if (!ms.ok()) return ms.status();
    c->prefill_ms = *ms;
  } else if (name == "--steps") {
    if (!(s = ParseCount(name, value, &i)).ok()) return s;
    if (i == 0) return absl::InvalidArgumentError("--steps: want >= 1");
    c->model_steps = static_cast<int>(std::min<int64_t>(i, 100000));
  } else if (name == "--prefetch") {
    c->model_prefetch.clear();
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      int64_t d = 0;
      if (!absl::SimpleAtoi(part, &d) || d < 0 || d % 64 != 0 || d > 16384) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--prefetch: '", part, "' is not a multiple of 64 in [0, 16384]"));
      }
      c->model_prefetch.push_back(d);
    }
  } else if (name == "--tunings") {
    c->model_tunings.clear();
    for (absl::string_view part : absl::StrSplit(value, ',')) {
      if (part.empty()) {
        return absl::InvalidArgumentError(
            "--tunings: an empty name (want FILE or default)");
      }
      c->model_tunings.emplace_back(part);
    }
  } else if (name == "--hugepages") {
    if (value == "off" || value == "on") {
      c->model_huge_pages = {value == "on"};
    } else if (value == "both" || value == "off,on") {
      c->model_huge_pages = {false, true};
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--hugepages: '", value, "' (want off, on or both)"));
    }
  } else if (name == "--epilogues") {
    if (value == "both") {
      c->model_variants = {"plain", "fused"};
    } else if (value == "plain" || value == "fused") {
      c->model_variants = {value};
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--epilogues: '", value, "' (want plain, fused or both)"));
    }
  } else if (name == "--out") {
    if (value.empty()) return absl::InvalidArgumentError("--out: empty");
    c->out_dir = value;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown option '", name, "' (see --help)"));
  }
  return absl::OkStatus();
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

}  // namespace

absl::StatusOr<BenchConfig> ParseBenchArgs(int argc, const char* const* argv) {
  BenchConfig c;
  c.layers = FindPreset(c.preset)->layers;
  std::vector<std::pair<std::string, std::string>> options;
  for (int a = 0; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--help" || arg == "-h") {
      c.help = true;
      return c;
    }
    if (arg == "--quick") {
      ApplyQuick(&c);
      continue;
    }
    if (arg == "--scaling") {
      c.scaling = true;
      continue;
    }
    if (arg == "--act-order") {
      c.act_order = true;
      continue;
    }
    if (arg == "--accuracy") {
      c.accuracy = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", arg, "' (see --help)"));
    }
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      options.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
    } else if (a + 1 < argc) {
      options.emplace_back(arg, argv[++a]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", arg, "' needs a value"));
    }
  }
  // Presets first, so that a --shape or --preset order does not matter
  // and --quick's defaults never override an explicit value.
  std::stable_partition(options.begin(), options.end(),
                        [](const auto& o) { return o.first == "--preset"; });
  bool ms_given = false;
  for (const auto& [name, value] : options) {
    if (absl::Status s = Apply(name, value, &c); !s.ok()) return s;
    ms_given = ms_given || name == "--m";
  }
  if (c.model.empty()) {
    for (const char* flag :
         {"--layers", "--group-size", "--prefill-m", "--steps", "--epilogues",
          "--prefetch", "--tunings", "--hugepages"}) {
      for (const auto& o : options) {
        if (o.first == flag) {
          return absl::InvalidArgumentError(
              absl::StrCat(flag, " needs --model=NAME"));
        }
      }
    }
    return c;
  }
  const ModelPreset* model = FindPreset(c.model);
  if (c.model_layers > model->num_layers) {
    return absl::InvalidArgumentError(absl::StrCat("--layers=", c.model_layers,
                                                   ": ", model->name, " has ",
                                                   model->num_layers));
  }
  if (c.model_layers == 0) c.model_layers = model->num_layers;
  for (const LayerShape& s : model->layers) {
    if (c.model_group_size > 0 && s.k % c.model_group_size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--group-size=", c.model_group_size, " does not divide K = ", s.k,
          " of ", model->name, "'s ", s.name));
    }
  }
  if (!c.model_prefetch.empty() && !c.model_tunings.empty()) {
    // Each --prefetch copy is built under a tuning of its own.
    return absl::InvalidArgumentError(
        "--prefetch and --tunings: give one of them (a tuning file can set "
        "prefetch_distance)");
  }
  if (!ms_given) c.ms = {1, 4, 8, 16};
  return c;
}

std::string BenchUsage() {
  return absl::StrCat(
      "usage: w4jit bench [options]\n"
      "\n"
      "Measures this machine's roofline (compute peaks of the instructions\n"
      "the kernels use, read bandwidth at each footprint), checks every\n"
      "w4jit kernel against the reference, then times W4A16 and DA8W4\n"
      "layers and oneDNN's dense bf16 and u8s8 matmuls on the same shapes,\n"
      "interleaved. Writes bench.csv, bench.json, bench.txt, roofline.svg,\n"
      "speedup.svg and, with those sections, scaling.csv,\n"
      "act_order.csv, accuracy.csv and model.csv. Exit code 1 if a kernel is "
      "wrong.\n"
      "\n"
      "options:\n"
      "  --preset=NAME        model layers: ",
      PresetNames(),
      "\n"
      "                       (default llama3-8b)\n"
      "  --shape=N,K[,G]      a single layer instead (repeatable; G default\n"
      "                       128, -1 per-channel)\n"
      "  --m=1,4,16,64,256,1024,4096  rows of x to time; above 1024, an M\n"
      "                       where one call would take longer than --budget\n"
      "                       (from the smaller M) is not timed\n"
      "  --modes=w4a16,da8w4  which w4jit modes\n"
      "  --peers=onednn|none  time oneDNN alongside (default onednn)\n"
      "  --weights=s4|u4      symmetric, or asymmetric with zero points\n"
      "  --threads=T          threads for w4jit, oneDNN and the peaks\n"
      "                       (default: all cores)\n"
      "  --reps=N             samples per figure (default 20)\n"
      "  --min-time=S         and at least S seconds of them (default 0.1)\n"
      "  --budget=S           but at most S seconds per figure (default 3)\n"
      "  --settle=S           pause before each timed batch, so that oneDNN's\n"
      "                       OpenMP threads stop spinning (default 0.02)\n"
      "  --cold-max-m=M       cold-cache rows for M <= M (default 16, 0: "
      "none)\n"
      "  --reference-max-macs=X  time a layer on the reference path only up\n"
      "                       to X multiply-adds per call (default 2^30)\n"
      "  --scaling            also time one layer at M=1 and M=256 on 1..T\n"
      "                       threads with each threading backend (pool,\n"
      "                       OpenMP) and print the parallel efficiency\n"
      "  --scaling-layer=NAME the layer --scaling times (default: the first\n"
      "                       square one)\n"
      "  --moe=M[,M...]       only the fused-MoE section for these models\n"
      "                       (qwen3-30b-a3b, mixtral-8x7b, gpt-oss-20b,\n"
      "                       gpt-oss-120b) at T = --m\n"
      "                       (default 1,4,16,64,256): moe.csv and the rows\n"
      "                       in bench.json\n"
      "  --act-order          also time every layer and M with GPTQ act-order\n"
      "                       (g_idx permuting K) against the same layer\n"
      "                       without, interleaved (act_order.csv)\n"
      "  --accuracy           also measure every layer's relative L2 error\n"
      "                       against float64 (same int4 weights, x as\n"
      "                       given) on Gaussian rows with outlier channels,\n"
      "                       for W4A16 and DA8W4 per-token and per-group\n"
      "                       activation scales, timed interleaved at every\n"
      "                       M (accuracy.csv)\n"
      "  --outliers=C         outlier channels of K (default 8; implies\n"
      "                       --accuracy)\n"
      "  --outlier-scale=X    their magnitude over the rest (default 50)\n"
      "  --accuracy-rows=R    rows of x the error is measured on (default\n"
      "                       16)\n"
      "  --model=NAME         instead of single layers, every linear layer of\n"
      "                       a whole model (same names as --preset), timed\n"
      "                       a decode step at a time through all layers\n"
      "                       (weights far beyond the L3: streamed from\n"
      "                       DRAM), both modes, interleaved with a plain\n"
      "                       streaming read of a DRAM-sized buffer; M from\n"
      "                       --m (default 1,4,8,16). Writes model.csv\n"
      "  --layers=L           build only L decoder layers (default: all);\n"
      "                       checked against MemAvailable\n"
      "  --group-size=G       every layer's quantization group instead of\n"
      "                       the preset's 128 (-1: per-channel)\n"
      "  --prefill-m=M,...    also time prefill steps at these M\n"
      "  --steps=N            timed steps per mode and M (default 10, after\n"
      "                       2 untimed)\n"
      "  --epilogues=plain|fused|both  the linears alone, with the epilogues\n"
      "                       a host fuses (gate_up silu_mul, o_proj and down\n"
      "                       + residual), or both (default)\n"
      "  --prefetch=D,...     one copy of the model per software prefetch\n"
      "                       distance in bytes (0: none; the kernels'\n"
      "                       prefetch_distance), timed interleaved; the\n"
      "                       copies replace any tuning file for the run\n"
      "  --tunings=F,...      one copy of the model per tuning file (as\n"
      "                       `w4jit sweep` writes; default: none), timed\n"
      "                       interleaved: a tuning against the defaults\n"
      "  --hugepages=off|on|both  packed weights on 2 MB pages\n"
      "                       (LayerOptions::huge_pages) or not, or one copy\n"
      "                       of each, interleaved (default off)\n"
      "  --out=DIR            output directory (default ./w4jit-bench-out)\n"
      "  --quick              M=1,16, fewer samples, cold only at M=1\n"
      "  --help               this text\n");
}

}  // namespace w4jit::perf
