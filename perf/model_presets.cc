#include "perf/model_presets.h"

#include "absl/strings/str_join.h"

namespace w4jit::perf {
namespace {

const MoePreset& Moe(std::string_view name) {
  for (const MoePreset& p : MoePresets()) {
    if (p.name == name) return p;
  }
  return MoePresets().front();  // not reached: the names below exist
}

}  // namespace

const std::vector<MoePreset>& MoePresets() {
  // gpt-oss (OpenAI's open-weight models): H = I = 2880 (not a multiple
  // of 128: group 32, as its MXFP4 blocks), biases on both projections,
  // the swigluoai gate.
  static const std::vector<MoePreset>* presets = new std::vector<MoePreset>{
      {"qwen3-30b-a3b", 2048, 768, 128, 8},
      {"mixtral-8x7b", 4096, 14336, 8, 2},
      {"gpt-oss-20b", 2880, 2880, 32, 4, 32, true, Activation::kSwigluOai},
      {"gpt-oss-120b", 2880, 2880, 128, 4, 32, true, Activation::kSwigluOai},
  };
  return *presets;
}

MoeDesc MoePresetDesc(const MoePreset& p, Mode mode, WeightType weight_type) {
  MoeDesc d;
  d.experts = p.experts;
  d.hidden = p.hidden;
  d.intermediate = p.intermediate;
  d.group_size = p.group_size;
  d.weight_type = weight_type;
  d.mode = mode;
  d.activation = p.activation;
  d.has_w13_bias = d.has_w2_bias = p.biases;
  return d;
}

const std::vector<ModelPreset>& ModelPresets() {
  // N x K as in docs/bench.md, group 128; the decoder
  // layer counts of the models' configs.
  static const std::vector<ModelPreset>* presets = new std::vector<ModelPreset>{
      {"llama3-8b",
       "Llama-3-8B",
       {{"qkv", 6144, 4096, 128, false},
        {"o_proj", 4096, 4096, 128, false},
        {"gate_up", 28672, 4096, 128, false},
        {"down", 4096, 14336, 128, false}},
       32},
      {"llama3-70b-tp4",
       "Llama-3-70B, one tensor-parallel shard of 4",
       {{"qkv", 2560, 8192, 128, false},
        {"o_proj", 8192, 2048, 128, false},
        {"gate_up", 14336, 8192, 128, false},
        {"down", 8192, 7168, 128, false}},
       80},
      {"qwen2.5-7b",
       "Qwen2.5-7B (qkv has bias)",
       {{"qkv", 4608, 3584, 128, true},
        {"o_proj", 3584, 3584, 128, false},
        {"gate_up", 37888, 3584, 128, false},
        {"down", 3584, 18944, 128, false}},
       28},
  };
  return *presets;
}

const ModelPreset* FindPreset(std::string_view name) {
  for (const ModelPreset& p : ModelPresets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string PresetNames() {
  std::vector<std::string> names;
  for (const ModelPreset& p : ModelPresets()) names.push_back(p.name);
  return absl::StrJoin(names, ", ");
}

const std::vector<ModelPreset>& MoeModelPresets() {
  // The attention projections of the models' configs: qkv fuses q (q
  // heads x head_dim) with k and v (kv heads x head_dim each); o_proj
  // takes q's width back to H. The MoE layer's group is the model's.
  static const std::vector<ModelPreset>* presets = new std::vector<ModelPreset>{
      {"qwen3-30b-a3b",
       "Qwen3-30B-A3B (32 q / 4 kv heads x 128; 128 experts, top-8)",
       {{"qkv", 5120, 2048, 128, false}, {"o_proj", 2048, 4096, 128, false}},
       48,
       Moe("qwen3-30b-a3b")},
      {"mixtral-8x7b",
       "Mixtral-8x7B (32 q / 8 kv heads x 128; 8 experts, top-2)",
       {{"qkv", 6144, 4096, 128, false}, {"o_proj", 4096, 4096, 128, false}},
       32,
       Moe("mixtral-8x7b")},
      {"gpt-oss-20b",
       "gpt-oss-20b (64 q / 8 kv heads x 64, biases; 32 experts, top-4, "
       "swigluoai)",
       {{"qkv", 5120, 2880, 32, true}, {"o_proj", 2880, 4096, 32, true}},
       24,
       Moe("gpt-oss-20b")},
      {"gpt-oss-120b",
       "gpt-oss-120b (64 q / 8 kv heads x 64, biases; 128 experts, top-4, "
       "swigluoai)",
       {{"qkv", 5120, 2880, 32, true}, {"o_proj", 2880, 4096, 32, true}},
       36,
       Moe("gpt-oss-120b")},
  };
  return *presets;
}

const ModelPreset* FindModelPreset(std::string_view name) {
  if (const ModelPreset* p = FindPreset(name)) return p;
  for (const ModelPreset& p : MoeModelPresets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string ModelPresetNames() {
  std::vector<std::string> names;
  for (const ModelPreset& p : ModelPresets()) names.push_back(p.name);
  for (const ModelPreset& p : MoeModelPresets()) names.push_back(p.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace w4jit::perf
