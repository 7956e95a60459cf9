// The old spellings of `w4jit bench`, options without a job (`w4jit bench
// --quick`, `--model=NAME ...`, `--moe=NAME`, `--scaling`, `--accuracy`),
// kept working until the next release: translated into the jobs they ran
// as (bench_args.h), with a line that says so.
#ifndef W4JIT_PERF_LIB_BENCH_LEGACY_H_
#define W4JIT_PERF_LIB_BENCH_LEGACY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/bench_args.h"

namespace w4jit::perf {

// The jobs an old argument list ran: `model` with --model, `moe` with --moe
// (--moe becomes --models, --m --tokens), else `layers`, then `scaling`
// with --scaling or --scaling-layer (which becomes --layer) and `accuracy`
// with --accuracy or its options (--accuracy-rows becomes --rows). Each job
// gets the options it has; one that no job has stays with the first, which
// reports it. BenchArgs::deprecation names the new commands.
absl::StatusOr<BenchArgs> ParseOldBenchArgs(std::vector<std::string> args);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_LEGACY_H_
