// Parsers of the option values that `w4jit bench` and `w4jit sweep` share,
// so that both accept (and reject) the same text with the same messages.
#ifndef W4JIT_PERF_LIB_CLI_ARGS_H_
#define W4JIT_PERF_LIB_CLI_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/model_presets.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// "1,16,256": comma-separated integers, each > 0. Errors name `flag`.
absl::StatusOr<std::vector<int64_t>> ParsePositiveList(const std::string& flag,
                                                       const std::string& text);

// "N,K" or "N,K,G" with N, K > 0 and G > 0 or -1 (per-channel; default
// 128), no bias; the layer is named "NxK".
absl::StatusOr<LayerShape> ParseShape(const std::string& flag,
                                      const std::string& text);

// "w4a16", "da8w4" or both, comma-separated.
absl::StatusOr<std::vector<Mode>> ParseModes(const std::string& flag,
                                             const std::string& text);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CLI_ARGS_H_
