// Command line of `w4jit sweep`, with the CLI's flags library
// (cli/flags.h).
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "cli/flags.h"
#include "perf/lib/cli_args.h"
#include "perf/lib/sweep/sweep_runner.h"

namespace w4jit::perf {
namespace {

using flags::AddOption;
using flags::AddRepeatedOption;

// One shape per line ("N,K[,G]"); '#' starts a comment.
absl::StatusOr<std::vector<LayerShape>> ShapesFromFile(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot read " + path);
  std::vector<LayerShape> shapes;
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    std::string text(
        absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
    if (text.empty()) continue;
    absl::StatusOr<LayerShape> shape = ParseShape(text);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", line_no, ": ", shape.status().message()));
    }
    shapes.push_back(*shape);
  }
  return shapes;
}

// Every option of `w4jit sweep`, writing into *c. Callbacks run in this
// order (cli/flags.h): the layers of --preset, then --shape, then --file.
std::unique_ptr<CLI::App> SweepApp(SweepConfig* c) {
  const SweepConfig d;
  auto app = flags::NewApp(
      "w4jit sweep",
      "Tunes the kernels for this CPU: for each layer shape, mode and M it "
      "checks every candidate configuration against the reference, times "
      "the correct ones against the defaults (interleaved), combines the "
      "winners and writes a tuning file that W4JIT_TUNING_FILE or "
      "LoadTuningFile() applies on this CPU class.");
  CLI::App& a = *app;
  a.add_flag_callback(
      "--quick",
      [c] {
        c->quick = true;
        c->timing.min_reps = 5;
        c->timing.min_time_s = 0.03;
        c->timing.budget_s = 0.4;
      },
      "fewer candidates and shorter timings");
  AddRepeatedOption<const ModelPreset*>(
      a, "--preset", "NAME",
      absl::StrCat("model shapes (repeatable; ", PresetNames(), ")"),
      ParsePreset,
      [c](std::vector<const ModelPreset*> presets) {
        for (const ModelPreset* p : presets) {
          c->preset = p->name;
          c->layers.insert(c->layers.end(), p->layers.begin(), p->layers.end());
        }
      })
      ->default_str(d.preset);
  AddRepeatedOption<LayerShape>(
      a, "--shape", "N,K[,G]",
      "a layer shape instead (repeatable; G default 128, -1 per-channel)",
      ParseShape, [c](std::vector<LayerShape> shapes) {
        c->preset = "custom";
        c->layers.insert(c->layers.end(), shapes.begin(), shapes.end());
      });
  AddRepeatedOption<std::vector<LayerShape>>(
      a, "--file", "PATH",
      "shapes from a file, one N,K[,G] per line, '#' comments (repeatable)",
      ShapesFromFile, [c](std::vector<std::vector<LayerShape>> files) {
        c->preset = "custom";
        for (const std::vector<LayerShape>& shapes : files) {
          c->layers.insert(c->layers.end(), shapes.begin(), shapes.end());
        }
      });
  AddOption<std::vector<Mode>>(a, "--modes", "w4a16,da8w4", "modes to tune",
                               ParseModes,
                               [c](std::vector<Mode> m) { c->modes = m; })
      ->default_str("w4a16,da8w4");
  AddOption<std::vector<int64_t>>(
      a, "--m", "LIST", "M values to tune for", flags::PositiveIntegerList,
      [c](std::vector<int64_t> ms) { c->ms = std::move(ms); })
      ->default_str(absl::StrJoin(d.ms, ","));
  AddOption<int64_t>(
      a, "--cold-max-m", "M",
      "time M values up to this cold: each candidate's weights copied past "
      "twice the last-level cache and streamed from DRAM, as decode reads "
      "them (0: everything hot)",
      flags::NonNegativeInteger, [c](int64_t m) { c->cold_max_m = m; })
      ->default_str(std::to_string(d.cold_max_m));
  AddOption<int64_t>(
      a, "--threads", "N", "threads (default: all available cores)",
      flags::PositiveInteger, [c](int64_t t) {
        c->threads = static_cast<int>(std::min<int64_t>(t, 1 << 20));
      });
  AddOption<double>(a, "--budget", "SECONDS",
                    "stop after this long; the rest keeps defaults "
                    "(default: no limit)",
                    flags::PositiveNumber, [c](double s) { c->budget_s = s; });
  AddOption<std::string>(
      a, "--out", "DIR", "output directory: tuning.json, sweep.json",
      flags::NonEmpty, [c](std::string dir) { c->out_dir = std::move(dir); })
      ->default_str(d.out_dir);
  return app;
}

SweepConfig DefaultSweepConfig() {
  SweepConfig c;
  c.timing.min_reps = 10;
  c.timing.min_time_s = 0.1;
  c.timing.budget_s = 1.5;
  c.timing.settle_s = 0.0;  // no OpenMP peers here
  return c;
}

}  // namespace

absl::StatusOr<SweepConfig> ParseSweepArgs(int argc, const char* const* argv) {
  SweepConfig c = DefaultSweepConfig();
  std::unique_ptr<CLI::App> app = SweepApp(&c);
  absl::StatusOr<bool> help = flags::Parse(*app, argc, argv);
  if (!help.ok()) return help.status();
  if (*help) {
    SweepConfig h;
    h.help = true;
    return h;
  }
  if (c.layers.empty()) c.layers = FindPreset(c.preset)->layers;
  return c;
}

std::string SweepUsage() {
  SweepConfig unused;
  return SweepApp(&unused)->help();
}

}  // namespace w4jit::perf
