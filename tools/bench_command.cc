// `w4jit bench`: checks and times the kernels against the measured
// roofline and oneDNN, prints the tables and writes CSV, JSON and SVG.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/commands.h"

#ifdef W4JIT_HAVE_PERF
#include "absl/strings/str_join.h"
#include "perf/lib/bench_config.h"
#include "perf/lib/bench_runner.h"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/sections/moe_bench.h"
#include "w4jit/parallel.hpp"
#endif

namespace w4jit::tools {

#ifndef W4JIT_HAVE_PERF

int RunBench(int, char**) {
  std::fprintf(stderr,
               "w4jit bench: perf support was not built (configure with "
               "-DW4JIT_BUILD_PERF=ON)\n");
  return 1;
}

#else

// Writes the report's files into `dir` and lists them; 1 if it cannot.
int WriteFiles(const perf::BenchReport& report, const std::string& text,
               const std::string& dir) {
  absl::StatusOr<std::vector<std::string> > files =
      perf::WriteBenchFiles(report, text, dir);
  if (!files.ok()) {
    std::fprintf(stderr, "w4jit bench: %s\n",
                 files.status().ToString().c_str());
    return 1;
  }
  std::printf("\nwrote");
  for (const std::string& f : *files) std::printf(" %s", f.c_str());
  std::printf("\n");
  return 0;
}

// `--moe`: the fused-MoE section alone; its table on stdout, bench.json
// (the rows under "moe"), bench.txt and moe.csv.
int RunMoe(const perf::BenchConfig& config) {
  SetNumThreads(config.threads);
  perf::MoeBenchOptions options;
  options.presets = config.moe;
  options.tokens = config.moe_tokens;
  options.modes = config.modes;
  options.timing = config.timing;
  options.roofline = config.roofline;
  absl::StatusOr<std::vector<perf::MoeBenchRow> > rows =
      perf::RunMoeBench(options, [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      });
  if (!rows.ok()) {
    std::fprintf(stderr, "w4jit bench: %s\n", rows.status().ToString().c_str());
    return 1;
  }
  perf::BenchReport report = perf::NewReport(config);
  report.preset = absl::StrJoin(config.moe, ",");
  for (Mode m : config.modes) {
    report.impls.push_back(m == Mode::kW4A16 ? perf::kImplW4a16
                                             : perf::kImplDa8w4);
  }
  report.moe = *std::move(rows);
  const std::string text = perf::MoeTable(report.moe);
  std::printf("\n%s", text.c_str());
  return WriteFiles(report, text, config.out_dir);
}

int RunBench(int argc, char** argv) {
  absl::StatusOr<perf::BenchConfig> config = perf::ParseBenchArgs(argc, argv);
  if (!config.ok()) {
    std::fprintf(stderr, "w4jit bench: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  if (config->help) {
    std::printf("%s", perf::BenchUsage().c_str());
    return 0;
  }
  if (!config->moe.empty()) return RunMoe(*config);
  // Packing a whole model takes a while: a progress line on a terminal.
  const bool tty = isatty(STDERR_FILENO) != 0;
  const perf::ProgressFn status_line = [](const std::string& line) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
  };
  absl::StatusOr<perf::BenchReport> report = perf::RunBench(
      *config,
      [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      },
      tty ? status_line : nullptr);
  if (!report.ok()) {
    std::fprintf(stderr, "w4jit bench: %s\n",
                 report.status().ToString().c_str());
    return 1;
  }
  const std::string text = perf::FormatReport(*report);
  std::printf("\n%s", text.c_str());
  if (WriteFiles(*report, text, config->out_dir) != 0) return 1;
  if (report->any_failed()) {
    std::fprintf(stderr,
                 "w4jit bench: some kernels are wrong or failed to run (rows "
                 "marked FAILED/error); their figures are not reported\n");
    return 1;
  }
  return 0;
}

#endif  // W4JIT_HAVE_PERF

}  // namespace w4jit::tools
