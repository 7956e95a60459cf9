// The command line of `w4jit bench`: a job, then that job's options
// (`w4jit bench layers --m=1,16`), each job an app of its own made with the
// CLI's flags library (cli/flags.h), with its own --help.
#ifndef W4JIT_PERF_LIB_BENCH_ARGS_H_
#define W4JIT_PERF_LIB_BENCH_ARGS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "perf/lib/bench_options.h"

namespace w4jit::perf {

struct BenchArgs {
  std::vector<BenchJob> jobs;  // one; an old spelling may ask for several
  std::string help;            // --help was given: print this, run nothing
  // An old spelling (options without a job): what it runs as, for one
  // line on stderr (bench_legacy.h).
  std::string deprecation;
};

// Parses the arguments after `bench` (argv[0] is the job's name): --opt=value
// or --opt value; --quick sets the job's smaller defaults that explicit
// options still override. An unknown job or option, a missing or bad value
// is an InvalidArgumentError that names it; --help gives the job's help (or
// without a job, the list of jobs). Arguments that start with an option
// (or none at all) are an old spelling, translated by
// TranslateOldBenchArgs.
absl::StatusOr<BenchArgs> ParseBenchArgs(int argc, const char* const* argv);
absl::StatusOr<BenchArgs> ParseBenchArgs(std::vector<std::string> args);

// "layers", "scaling", "accuracy", "model", "moe".
const std::vector<std::string>& BenchJobNames();

// The text `w4jit bench <job> --help` prints; `job` "" for `w4jit bench
// --help` (the jobs).
std::string BenchUsage(const std::string& job);

// The app of job `name` (one of BenchJobNames()) writing into *job, which
// it sets to that job's defaults; nullptr for another name. For the old
// spellings' translation: which options a job has.
std::unique_ptr<CLI::App> BenchJobApp(const std::string& name, BenchJob* job);

// A job's app ("w4jit bench <job>") with the options every job has,
// writing into *c: --quick first (so that explicit values override what it
// sets: the options' callbacks run in the order they are defined), then
// modes, weights, threads, timing, --out. `quick_more` sets the job's own
// smaller defaults (`quick_help` says which, ", M=1,16").
std::unique_ptr<CLI::App> NewBenchJobApp(const std::string& job,
                                         const std::string& description,
                                         BenchCommon* c,
                                         std::function<void()> quick_more,
                                         const std::string& quick_help);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_ARGS_H_
