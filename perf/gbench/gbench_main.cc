// w4jit_gbench: Google Benchmark microbenchmarks of the parts a layer's run
// is built from (the activation quantizer, the x packing, the thread pool,
// the kernel cache). Use --benchmark_filter to pick, e.g. 'ActQuantizer',
// and --benchmark_format=json for machine output. Whole layers:
// `w4jit bench layers --shape=N,K --m=... --peers=none`.
// Threads: W4JIT_NUM_THREADS-free; the library's default (all cores), or
// --w4jit_threads=T.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "benchmark/benchmark.h"
#include "dispatch/cpu_profile.h"
#include "perf/gbench/registry.h"
#include "runtime/kernel_cache.h"
#include "w4jit/w4jit.hpp"

int main(int argc, char** argv) {
  // Our own flag first; Google Benchmark rejects flags it does not know.
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--w4jit_threads=", 16) == 0) {
      w4jit::SetNumThreads(std::atoi(argv[i] + 16));
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const w4jit::internal::CpuProfile& cpu = w4jit::internal::HostCpu();
  benchmark::AddCustomContext("w4jit_version", w4jit::Version());
  benchmark::AddCustomContext("w4jit_isa",
                              w4jit::internal::ToString(cpu.isa_cap));
  benchmark::AddCustomContext("w4jit_cpu", cpu.name);
  benchmark::AddCustomContext("w4jit_threads",
                              std::to_string(w4jit::GetNumThreads()));
  w4jit::perf::RegisterQuantizerBenchmarks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  const w4jit::internal::KernelCacheStats jit =
      w4jit::internal::GetKernelCacheStats();
  std::fprintf(
      stderr,
      "JIT: %lld kernels generated in %.1f ms (%.2f ms per kernel), "
      "%lld cache hits\n",
      static_cast<long long>(jit.generations), jit.total_generation_ms,
      jit.generations > 0 ? jit.total_generation_ms / jit.generations : 0.0,
      static_cast<long long>(jit.hits));
  return 0;
}
