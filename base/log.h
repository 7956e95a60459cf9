// Internal logging: formats and forwards to the host's hook, if any.
#ifndef W4JIT_BASE_LOG_H_
#define W4JIT_BASE_LOG_H_

#include <string_view>

#include "w4jit/log.hpp"

namespace w4jit::internal {

void Log(LogLevel level, std::string_view message);

}  // namespace w4jit::internal

#endif  // W4JIT_BASE_LOG_H_
