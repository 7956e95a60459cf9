#include "perf/model_presets.h"

#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "perf/presets_json.h"

namespace w4jit::perf {
namespace {

using nlohmann::json;

// The shapes of python/w4jit/bench/presets.json, which the build embeds
// (kPresetsJson), parsed once.
struct Presets {
  std::vector<MoePreset> moe;
  std::vector<ModelPreset> dense;
  std::vector<ModelPreset> moe_models;
};

std::vector<LayerShape> Layers(const json& layers) {
  std::vector<LayerShape> out;
  for (const json& l : layers) {
    out.push_back({l.at("name"), l.at("n"), l.at("k"),
                   l.value("group_size", int64_t{128}),
                   l.value("bias", false)});
  }
  return out;
}

ModelPreset Model(const json& m) {
  return {m.at("name"), m.at("description"), Layers(m.at("layers")),
          m.at("num_layers"), std::nullopt};
}

const Presets& AllPresets() {
  static const Presets* presets = [] {
    const json doc = json::parse(kPresetsJson);
    auto* p = new Presets;
    for (const json& m : doc.at("moe_layers")) {
      p->moe.push_back(
          {m.at("name"), m.at("hidden"), m.at("intermediate"), m.at("experts"),
           m.at("top_k"), m.value("group_size", int64_t{128}),
           m.value("biases", false),
           m.value("activation", "silu") == "swigluoai" ? Activation::kSwigluOai
                                                        : Activation::kSilu});
    }
    for (const json& m : doc.at("dense")) p->dense.push_back(Model(m));
    for (const json& m : doc.at("moe_models")) {
      ModelPreset model = Model(m);
      for (const MoePreset& moe : p->moe) {
        if (moe.name == m.at("moe")) model.moe = moe;
      }
      p->moe_models.push_back(std::move(model));
    }
    return p;
  }();
  return *presets;
}

}  // namespace

const std::vector<MoePreset>& MoePresets() { return AllPresets().moe; }

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

const std::vector<ModelPreset>& ModelPresets() { return AllPresets().dense; }

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
  return AllPresets().moe_models;
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
