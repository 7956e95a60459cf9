// Command line of `w4jit sweep`.
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "perf/lib/cli_args.h"
#include "perf/lib/sweep_runner.h"

namespace w4jit::perf {
namespace {

// One shape per line ("N,K[,G]"); '#' starts a comment.
absl::Status ShapesFromFile(const std::string& path, SweepConfig* c) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("--file: cannot read " + path);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string text(
        absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
    if (text.empty()) continue;
    auto shape = ParseShape(absl::StrCat("--file ", path, ":", line_no), text);
    if (!shape.ok()) return shape.status();
    c->layers.push_back(*shape);
  }
  return absl::OkStatus();
}

absl::Status Apply(const std::string& name, const std::string& value,
                   SweepConfig* c, bool* custom) {
  if (name == "--preset") {
    const ModelPreset* p = FindPreset(value);
    if (p == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--preset: unknown '", value, "' (known: ", PresetNames(), ")"));
    }
    c->preset = value;
    c->layers.insert(c->layers.end(), p->layers.begin(), p->layers.end());
  } else if (name == "--shape") {
    auto shape = ParseShape(name, value);
    if (!shape.ok()) return shape.status();
    c->layers.push_back(*shape);
    *custom = true;
  } else if (name == "--file") {
    *custom = true;
    return ShapesFromFile(value, c);
  } else if (name == "--modes") {
    auto modes = ParseModes(name, value);
    if (!modes.ok()) return modes.status();
    c->modes = *modes;
  } else if (name == "--m") {
    auto ms = ParsePositiveList(name, value);
    if (!ms.ok()) return ms.status();
    c->ms = *ms;
  } else if (name == "--threads") {
    auto t = ParsePositiveList(name, value);
    if (!t.ok() || t->size() != 1) {
      return absl::InvalidArgumentError("--threads: want one positive integer");
    }
    c->threads = static_cast<int>((*t)[0]);
  } else if (name == "--budget") {
    double s;
    if (!absl::SimpleAtod(value, &s) || s <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--budget: '", value, "' is not a positive number of seconds"));
    }
    c->budget_s = s;
  } else if (name == "--out") {
    c->out_dir = value;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown option '", name, "' (see w4jit sweep --help)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SweepConfig> ParseSweepArgs(int argc, const char* const* argv) {
  SweepConfig c;
  c.timing.min_reps = 10;
  c.timing.min_time_s = 0.1;
  c.timing.budget_s = 1.5;
  c.timing.settle_s = 0.0;  // no OpenMP peers here
  std::vector<std::pair<std::string, std::string>> options;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      c.help = true;
      return c;
    }
    if (arg == "--quick") {
      c.quick = true;
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      options.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
    } else if (i + 1 < argc) {
      options.emplace_back(arg, argv[++i]);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("option '", arg, "' needs a value"));
    }
  }
  if (c.quick) {
    c.timing.min_reps = 5;
    c.timing.min_time_s = 0.03;
    c.timing.budget_s = 0.4;
  }
  bool custom = false;
  for (const auto& [name, value] : options) {
    if (absl::Status s = Apply(name, value, &c, &custom); !s.ok()) return s;
  }
  if (c.layers.empty()) {
    c.layers = FindPreset(c.preset)->layers;
  } else if (custom) {
    c.preset = "custom";
  }
  return c;
}

std::string SweepUsage() {
  return absl::StrCat(
      "usage: w4jit sweep [options]\n\n"
      "Tunes the kernels for this CPU: for each layer shape, mode and M it\n"
      "checks every candidate configuration against the reference, times the\n"
      "correct ones against the defaults (interleaved), combines the winners\n"
      "and writes a tuning file that W4JIT_TUNING_FILE or LoadTuningFile()\n"
      "applies on this CPU class.\n\n"
      "  --preset=NAME        model shapes (default llama3-8b; known: ",
      PresetNames(),
      ")\n"
      "  --shape=N,K[,G]      a layer shape instead (repeatable; G default "
      "128,\n"
      "                       -1 per-channel)\n"
      "  --file=PATH          shapes from a file, one N,K[,G] per line\n"
      "  --modes=w4a16,da8w4  modes to tune (default both)\n"
      "  --m=1,16,256         M values to tune for (default 1,16,256)\n"
      "  --threads=N          threads (default: all available cores)\n"
      "  --budget=SECONDS     stop after this long; the rest keeps defaults\n"
      "  --quick              fewer candidates and shorter timings\n"
      "  --out=DIR            output directory (default w4jit-sweep-out):\n"
      "                       tuning.json, candidates.csv\n");
}

}  // namespace w4jit::perf
