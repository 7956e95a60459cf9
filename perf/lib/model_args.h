// The options of `w4jit bench model` (bench_args.h parses the jobs).
#ifndef W4JIT_PERF_LIB_MODEL_ARGS_H_
#define W4JIT_PERF_LIB_MODEL_ARGS_H_

#include <memory>

#include "CLI/CLI.hpp"
#include "perf/lib/bench_options.h"

namespace w4jit::perf {

// The app of `w4jit bench model`, writing into *c. After the options, the
// values are checked against the model named (its layer count, the K its
// group must divide, what only a MoE model has) and the decode M get the
// model's defaults where --m was not given.
std::unique_ptr<CLI::App> ModelApp(ModelOptions* c);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_MODEL_ARGS_H_
