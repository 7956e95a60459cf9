// The microbenchmark families of w4jit_gbench, each registered from the
// model presets (perf/model_presets.h) by its own file.
#ifndef W4JIT_PERF_GBENCH_REGISTRY_H_
#define W4JIT_PERF_GBENCH_REGISTRY_H_

namespace w4jit::perf {

// Layer::Create (import + repack + JIT) per mode and layer, with the JIT
// time per kernel from the kernel cache's statistics.
void RegisterCreateBenchmarks();
// Layer::Run per mode, layer and M.
void RegisterLayerBenchmarks();
// The DA8W4 activation quantizer per K and M.
void RegisterQuantizerBenchmarks();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_GBENCH_REGISTRY_H_
