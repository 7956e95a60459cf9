// Tuning files recorded by `w4jit sweep`.
#ifndef W4JIT_TUNING_HPP_
#define W4JIT_TUNING_HPP_

#include <string>

#include "absl/status/status.h"

namespace w4jit {

// Uses the tuning file at `path` for layers created from now on, if it
// parses and was recorded on this CPU class; otherwise returns why (and
// logs it) and the defaults stay in force. Results are correct either way:
// tuning only changes speed. An empty path goes back to the defaults. The
// environment variable W4JIT_TUNING_FILE does the same at the first layer.
absl::Status LoadTuningFile(const std::string& path);

}  // namespace w4jit

#endif  // W4JIT_TUNING_HPP_
