// The cost of a kernel cache hit (runtime/kernel_cache.h): what every
// Layer::Create pays per kernel once the process has JIT-ed it. It should
// stay well under a microsecond, also with threads asking at once.
#include <memory>

#include "benchmark/benchmark.h"
#include "jit/generator.h"
#include "runtime/kernel_cache.h"

namespace w4jit::perf {
namespace {

class ReturnGenerator : public internal::Generator {
 public:
  ReturnGenerator() : Generator("bench_cache_hit", 4096) {}

 protected:
  void Generate() override { ret(); }
};

internal::KernelConfig HitKey() {
  internal::W4a16PanelConfig config;
  config.mr = 6;
  config.nr = 16;
  config.n = 16;
  config.stride = 0xB17;  // apart from the real kernels
  return config;
}

void BM_KernelCacheHit(benchmark::State& state) {
  const internal::KernelConfig key = HitKey();
  const internal::GeneratorFactory factory = [] {
    return std::make_unique<ReturnGenerator>();
  };
  if (!internal::GetOrCreateKernel(key, factory).ok()) {
    state.SkipWithError("could not JIT the test kernel");
    return;
  }
  for (auto _ : state) {
    auto k = internal::GetOrCreateKernel(key, factory);
    benchmark::DoNotOptimize(k);
  }
}
BENCHMARK(BM_KernelCacheHit)->Threads(1)->Threads(2);

}  // namespace
}  // namespace w4jit::perf
