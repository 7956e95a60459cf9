// Tests' shorthand for parsing one `w4jit bench` job's command line.
#ifndef W4JIT_TESTS_BENCH_PARSE_H_
#define W4JIT_TESTS_BENCH_PARSE_H_

#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/bench_args.h"

namespace w4jit::perf {

// ParseBenchArgs(args) as the one job of type T it gives; an error if it
// gives an error, help, or other jobs.
template <typename T>
absl::StatusOr<T> ParseJob(std::vector<const char*> args) {
  absl::StatusOr<BenchArgs> a =
      ParseBenchArgs(static_cast<int>(args.size()), args.data());
  if (!a.ok()) return a.status();
  if (a->jobs.size() != 1 || !std::holds_alternative<T>(a->jobs[0])) {
    return absl::InternalError("not the one job expected");
  }
  return std::get<T>(std::move(a->jobs[0]));
}

}  // namespace w4jit::perf

#endif  // W4JIT_TESTS_BENCH_PARSE_H_
