// `w4jit bench <job>`: checks and times the kernels (perf/lib/bench_args.h
// lists the jobs), prints the tables and writes the report's files.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tools/commands.h"

#ifdef W4JIT_HAVE_PERF
#include "perf/lib/bench_args.h"
#include "perf/lib/bench_runner.h"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
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
                 std::string(files.status().message()).c_str());
    return 1;
  }
  std::printf("\nwrote");
  for (const std::string& f : *files) std::printf(" %s", f.c_str());
  std::printf("\n");
  return 0;
}

int RunBench(int argc, char** argv) {
  absl::StatusOr<perf::BenchArgs> args = perf::ParseBenchArgs(argc, argv);
  if (!args.ok()) {
    std::fprintf(stderr, "w4jit bench: %s\n",
                 std::string(args.status().message()).c_str());
    return 2;
  }
  if (!args->help.empty()) {
    std::printf("%s", args->help.c_str());
    return 0;
  }
  if (!args->deprecation.empty()) {
    std::fprintf(stderr, "%s\n", args->deprecation.c_str());
  }
  // Packing a whole model takes a while: a progress line on a terminal.
  const bool tty = isatty(STDERR_FILENO) != 0;
  const perf::ProgressFn status_line = [](const std::string& line) {
    std::fprintf(stderr, "\r%s\033[K", line.c_str());
    std::fflush(stderr);
  };
  absl::StatusOr<perf::BenchReport> report = perf::RunBench(
      args->jobs,
      [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      },
      tty ? status_line : nullptr);
  if (!report.ok()) {
    std::fprintf(stderr, "w4jit bench: %s\n",
                 std::string(report.status().message()).c_str());
    return 1;
  }
  const std::string text = perf::FormatReport(*report);
  std::printf("\n%s", text.c_str());
  if (WriteFiles(*report, text, perf::Common(args->jobs.front()).out_dir) !=
      0) {
    return 1;
  }
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
