#include "perf/model_presets.h"

#include "absl/strings/str_join.h"

namespace w4jit::perf {

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

}  // namespace w4jit::perf
