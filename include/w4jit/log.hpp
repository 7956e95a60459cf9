// The library never prints on its own. Messages (fallbacks, tuning files
// that were not applied, ...) go to a hook the host installs.
#ifndef W4JIT_LOG_HPP_
#define W4JIT_LOG_HPP_

#include <functional>
#include <string_view>

namespace w4jit {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

using LogHook = std::function<void(LogLevel level, std::string_view message)>;

// Installs the hook (nullptr: drop messages, the default). Setting the
// environment variable W4JIT_LOG=1 before the first message installs a hook
// that writes to stderr.
void SetLogHook(LogHook hook);

}  // namespace w4jit

#endif  // W4JIT_LOG_HPP_
