// Parsers of the option values that `w4jit bench` and `w4jit sweep` share
// (their options are defined with cli/flags.h, which names the option in
// front of these messages), so that both accept and reject the same text.
#ifndef W4JIT_PERF_LIB_CLI_ARGS_H_
#define W4JIT_PERF_LIB_CLI_ARGS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/model_presets.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// "N,K" or "N,K,G" with N, K > 0 and G > 0 or -1 (per-channel; default
// 128), no bias; the layer is named "NxK".
absl::StatusOr<LayerShape> ParseShape(const std::string& text);

// "w4a16", "da8w4" or both, comma-separated.
absl::StatusOr<std::vector<Mode>> ParseModes(const std::string& text);

// A model preset's name (perf/model_presets.h).
absl::StatusOr<const ModelPreset*> ParsePreset(const std::string& text);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CLI_ARGS_H_
