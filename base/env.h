// The library's environment variables, read in one place: every W4JIT_*
// variable the library reads is a member of EnvVar and is read with
// GetEnv, so `grep getenv` finds this file only and the list below is the
// whole set (docs/environment.md describes each; the PyTorch ops' and the
// tests' own variables are theirs). Each reader parses its value and warns
// about a bad one where it is used, naming the variable.
#ifndef W4JIT_BASE_ENV_H_
#define W4JIT_BASE_ENV_H_

namespace w4jit::internal {

enum class EnvVar : int {
  kIsa,                  // W4JIT_ISA (dispatch/cpu_detect.cc)
  kLog,                  // W4JIT_LOG (base/log.cc)
  kPerfMap,              // W4JIT_PERF_MAP (jit/generator.cc)
  kDumpDir,              // W4JIT_DUMP_DIR (jit/generator.cc)
  kThreading,            // W4JIT_THREADING (runtime/threads/parallel.cc)
  kSpinUs,               // W4JIT_SPIN_US (runtime/threads/parallel.cc)
  kPin,                  // W4JIT_PIN (runtime/threads/parallel.cc)
  kTuningFile,           // W4JIT_TUNING_FILE (dispatch/tuning.cc)
  kHugePages,            // W4JIT_HUGEPAGES (base/memory.cc)
  kKernelCacheCapacity,  // W4JIT_KERNEL_CACHE_CAPACITY
                         // (runtime/kernel_cache.cc)
  kNumerics,             // W4JIT_NUMERICS (runtime/layer.cc)
};

// "W4JIT_ISA", ...
const char* EnvName(EnvVar var);

// The variable's value now, or nullptr when it is unset (read on every
// call: W4JIT_DUMP_DIR and W4JIT_PERF_MAP are read at each generation).
const char* GetEnv(EnvVar var);

}  // namespace w4jit::internal

#endif  // W4JIT_BASE_ENV_H_
