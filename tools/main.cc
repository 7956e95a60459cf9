// `w4jit`: what the library detects on this CPU, and its benchmarks. The
// command is chosen here; its arguments go to its own options (each
// subcommand defines them with cli/flags.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/flags.h"
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

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<CLI::App> app = w4jit::flags::NewApp(
      "w4jit",
      "JIT-generated int4-weight linear-layer kernels: what the library "
      "detects on this CPU, and its checks and benchmarks. `w4jit <command> "
      "--help` for a command's options.");
  app->require_subcommand(0, 1);
  for (const Subcommand& c : kSubcommands) {
    // Everything after the command's name is left for the command's own
    // options (its --help included).
    app->add_subcommand(c.name, c.help)->prefix_command();
  }
  const absl::StatusOr<bool> help =
      w4jit::flags::Parse(*app, argc - 1, argv + 1);
  if (!help.ok()) {
    std::fprintf(stderr, "w4jit: %s\n\n%s",
                 std::string(help.status().message()).c_str(),
                 app->help().c_str());
    return 2;
  }
  if (*help) {
    std::fputs(app->help().c_str(), stdout);
    return 0;
  }
  for (const Subcommand& c : kSubcommands) {
    CLI::App* sub = app->get_subcommand(c.name);
    if (!sub->parsed()) continue;
    std::vector<std::string> args = sub->remaining();
    std::vector<char*> ptrs;
    for (std::string& a : args) ptrs.push_back(a.data());
    ptrs.push_back(nullptr);
    return c.run(static_cast<int>(args.size()), ptrs.data());
  }
  // No command (an unknown one is an error of Parse's).
  std::fputs(app->help().c_str(), stderr);
  return 2;
}
