// `w4jit`: what the library detects on this CPU, and its benchmarks.
#include <cstdio>
#include <cstring>

#include "tools/commands.h"

namespace {

struct Subcommand {
  const char* name;
  const char* help;
  int (*run)(int, char**);
};

constexpr Subcommand kSubcommands[] = {
    {"info", "CPU profile, ISA tier chosen, kernel cache",
     w4jit::tools::RunInfo},
    {"bench", "check and time kernels against the roofline and peers",
     w4jit::tools::RunBench},
    {"sweep", "tune kernel parameters for this CPU, write a tuning file",
     w4jit::tools::RunSweep},
    {"selftest", "check random layers against the reference on every ISA",
     w4jit::tools::RunSelftest},
};

void Usage() {
  std::printf("usage: w4jit <command> [options]\n\ncommands:\n");
  for (const auto& c : kSubcommands) std::printf("  %-8s %s\n", c.name, c.help);
  std::printf("\n`w4jit <command> --help` for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0) {
    Usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : kSubcommands) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 2, argv + 2);
  }
  std::fprintf(stderr, "w4jit: unknown command '%s'\n\n", argv[1]);
  Usage();
  return 2;
}
