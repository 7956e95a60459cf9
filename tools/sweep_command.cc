// `w4jit sweep`: tunes kernel parameters for this CPU and writes a tuning
// file (perf/lib/sweep/sweep_runner.h does the work).
#include <unistd.h>

#include <cstdio>

#include "tools/commands.h"

#ifdef W4JIT_HAVE_PERF
#include "perf/lib/sweep/sweep_output.h"
#include "perf/lib/sweep/sweep_runner.h"
#endif

namespace w4jit::tools {

int RunSweep(int argc, char** argv) {
#ifndef W4JIT_HAVE_PERF
  (void)argc;
  (void)argv;
  std::fprintf(stderr, "w4jit sweep: built without perf support\n");
  return 1;
#else
  auto config = perf::ParseSweepArgs(argc, argv);
  if (!config.ok()) {
    std::fprintf(stderr, "w4jit sweep: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  if (config->help) {
    std::fputs(perf::SweepUsage().c_str(), stdout);
    return 0;
  }
  // On a terminal one progress line is rewritten in place; into a file or
  // pipe every step is a plain line.
  const bool tty = isatty(fileno(stdout)) != 0;
  auto progress = [tty](const std::string& line) {
    if (tty) {
      std::printf("\r\033[K%s", line.c_str());
    } else {
      std::printf("%s\n", line.c_str());
    }
    std::fflush(stdout);
  };
  auto report = perf::RunSweep(*config, progress, perf::JitKernelMaker());
  if (tty) std::printf("\r\033[K");
  if (!report.ok()) {
    std::fprintf(stderr, "w4jit sweep: %s\n",
                 std::string(report.status().message()).c_str());
    return 1;
  }
  std::fputs(perf::FormatSweepTable(*report).c_str(), stdout);
  auto files = perf::WriteSweepFiles(*report, config->out_dir);
  if (!files.ok()) {
    std::fprintf(stderr, "w4jit sweep: %s\n",
                 std::string(files.status().message()).c_str());
    return 1;
  }
  for (const std::string& f : *files) std::printf("wrote %s\n", f.c_str());
  std::printf("use it: W4JIT_TUNING_FILE=%s/tuning.json\n",
              config->out_dir.c_str());
  return 0;
#endif
}

}  // namespace w4jit::tools
