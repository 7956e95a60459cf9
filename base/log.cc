#include "base/log.h"

#include <cstdio>
#include <mutex>
#include <string>

#include "base/env.h"

namespace w4jit {
namespace {

struct LogState {
  std::mutex mu;
  LogHook hook;
  bool env_checked = false;
};

LogState& State() {
  static LogState* s = new LogState;
  return *s;
}

const char* LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "?";
}

}  // namespace

void SetLogHook(LogHook hook) {
  LogState& s = State();
  std::lock_guard<std::mutex> lock(s.mu);
  s.hook = std::move(hook);
  s.env_checked = true;  // an explicit choice wins over W4JIT_LOG
}

namespace internal {

void Log(LogLevel level, std::string_view message) {
  LogState& s = State();
  LogHook hook;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.env_checked) {
      s.env_checked = true;
      const char* env = GetEnv(EnvVar::kLog);
      if (env != nullptr && std::string(env) == "1") {
        s.hook = [](LogLevel l, std::string_view m) {
          std::fprintf(stderr, "w4jit %s: %.*s\n", LevelName(l),
                       static_cast<int>(m.size()), m.data());
        };
      }
    }
    hook = s.hook;
  }
  if (hook) hook(level, message);
}

}  // namespace internal
}  // namespace w4jit
