// Subcommands of the `w4jit` tool, one file each.
#ifndef W4JIT_TOOLS_COMMANDS_H_
#define W4JIT_TOOLS_COMMANDS_H_

namespace w4jit::tools {

// Each takes the arguments after the subcommand name and returns the
// process exit code.
int RunInfo(int argc, char** argv);
int RunBench(int argc, char** argv);
int RunSweep(int argc, char** argv);
int RunSelftest(int argc, char** argv);

}  // namespace w4jit::tools

#endif  // W4JIT_TOOLS_COMMANDS_H_
