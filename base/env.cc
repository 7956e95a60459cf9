#include "base/env.h"

#include <cstdlib>

namespace w4jit::internal {

const char* EnvName(EnvVar var) {
  switch (var) {
    case EnvVar::kIsa:
      return "W4JIT_ISA";
    case EnvVar::kLog:
      return "W4JIT_LOG";
    case EnvVar::kPerfMap:
      return "W4JIT_PERF_MAP";
    case EnvVar::kDumpDir:
      return "W4JIT_DUMP_DIR";
    case EnvVar::kThreading:
      return "W4JIT_THREADING";
    case EnvVar::kSpinUs:
      return "W4JIT_SPIN_US";
    case EnvVar::kPin:
      return "W4JIT_PIN";
    case EnvVar::kTuningFile:
      return "W4JIT_TUNING_FILE";
    case EnvVar::kHugePages:
      return "W4JIT_HUGEPAGES";
    case EnvVar::kKernelCacheCapacity:
      return "W4JIT_KERNEL_CACHE_CAPACITY";
    case EnvVar::kNumerics:
      return "W4JIT_NUMERICS";
  }
  return "W4JIT_UNKNOWN";
}

const char* GetEnv(EnvVar var) { return std::getenv(EnvName(var)); }

}  // namespace w4jit::internal
