// Layer shapes of the models the benchmarks run (docs/bench.md), fused as
// vLLM runs them. Shared by `w4jit bench`, the
// Google Benchmark microbenchmarks and `w4jit sweep`.
#ifndef W4JIT_PERF_MODEL_PRESETS_H_
#define W4JIT_PERF_MODEL_PRESETS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "w4jit/moe.hpp"
#include "w4jit/types.hpp"

namespace w4jit::perf {

struct LayerShape {
  std::string name;  // "qkv", "o_proj", "gate_up", "down", or "custom"
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 128;  // -1: per-channel
  bool has_bias = false;
};

// A model's fused MoE layer (MoeLayer, include/w4jit/moe.hpp): what
// `w4jit bench moe` times alone and the MoE models of `bench model` put in
// every decoder layer.
struct MoePreset {
  std::string name;
  int64_t hidden, intermediate, experts, top_k;
  int64_t group_size = 128;
  bool biases = false;  // w13 [2I] and w2 [H] per expert
  Activation activation = Activation::kSilu;
};

// The MoE layers of the models' configs, in a fixed order:
// "qwen3-30b-a3b" (H 2048, I 768, E 128, k 8), "mixtral-8x7b" (H 4096,
// I 14336, E 8, k 2), "gpt-oss-20b" (H = I = 2880, E 32, k 4, group 32,
// biases, swigluoai), "gpt-oss-120b" (E 128, otherwise gpt-oss-20b's).
const std::vector<MoePreset>& MoePresets();

// A MoE preset's layer as both benches build it: its shapes, group,
// activation and biases, bf16 x and y (MoeDesc's defaults), per-token
// activation scales for DA8W4.
MoeDesc MoePresetDesc(const MoePreset& p, Mode mode,
                      WeightType weight_type = WeightType::kS4);

struct ModelPreset {
  std::string name;  // "llama3-8b", ...
  std::string description;
  // One decoder layer's linears, in order. A MoE model's are its
  // attention projections (qkv fused, o_proj); its MLP is `moe`.
  std::vector<LayerShape> layers;
  int num_layers = 0;  // decoder layers of the whole model
  // A MoE model's expert layer, run after `layers` in every decoder
  // layer; empty for a dense model.
  std::optional<MoePreset> moe;
};

// Every built-in dense preset (--preset, --model, the microbenchmarks and
// `w4jit sweep`), in a fixed order.
const std::vector<ModelPreset>& ModelPresets();

// nullptr if no dense preset has this name.
const ModelPreset* FindPreset(std::string_view name);

// "llama3-8b, llama3-70b-tp4, qwen2.5-7b", for help and error messages.
std::string PresetNames();

// The MoE models --model takes besides the dense presets: attention
// projections as linears and a fused MoE layer per decoder layer
// (qwen3-30b-a3b, mixtral-8x7b, gpt-oss-20b, gpt-oss-120b).
const std::vector<ModelPreset>& MoeModelPresets();

// A dense or MoE model preset by name (--model); nullptr if unknown.
const ModelPreset* FindModelPreset(std::string_view name);

// Every name FindModelPreset knows, dense first.
std::string ModelPresetNames();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_MODEL_PRESETS_H_
