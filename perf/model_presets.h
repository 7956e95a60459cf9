// Layer shapes of the models the benchmarks run (docs/bench.md), fused as
// vLLM runs them. Shared by `w4jit bench`, the
// Google Benchmark microbenchmarks and `w4jit sweep`.
#ifndef W4JIT_PERF_MODEL_PRESETS_H_
#define W4JIT_PERF_MODEL_PRESETS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace w4jit::perf {

struct LayerShape {
  std::string name;  // "qkv", "o_proj", "gate_up", "down", or "custom"
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 128;  // -1: per-channel
  bool has_bias = false;
};

struct ModelPreset {
  std::string name;  // "llama3-8b", ...
  std::string description;
  std::vector<LayerShape> layers;  // one decoder layer's linears, in order
  int num_layers = 0;              // decoder layers of the whole model
};

// Every built-in preset, in a fixed order.
const std::vector<ModelPreset>& ModelPresets();

// nullptr if no preset has this name.
const ModelPreset* FindPreset(std::string_view name);

// "llama3-8b, llama3-70b-tp4, qwen2.5-7b", for help and error messages.
std::string PresetNames();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_MODEL_PRESETS_H_
