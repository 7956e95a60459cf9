// The microbenchmarks of w4jit_gbench registered from the model presets
// (perf/model_presets.h). Whole layers are timed by `w4jit bench layers`,
// which checks their outputs and interleaves the modes.
#ifndef W4JIT_PERF_GBENCH_REGISTRY_H_
#define W4JIT_PERF_GBENCH_REGISTRY_H_

namespace w4jit::perf {

// The DA8W4 activation quantizer per K and M.
void RegisterQuantizerBenchmarks();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_GBENCH_REGISTRY_H_
