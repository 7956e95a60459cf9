#include "perf/lib/sections/model_copy.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "check/moe_check.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/output_check.h"
#include "perf/lib/sections/model_memory.h"
#include "perf/lib/sections/moe_bench.h"
#include "runtime/formats/import.h"

namespace w4jit::perf {
namespace {

bool IsResidual(const LayerShape& s) {
  return s.name == "o_proj" || s.name == "down";
}

// The preset's layer with the epilogue a host fuses into it (variant
// "fused"): gate_up's silu_mul, the residual add of o_proj and down.
LayerDesc ModelDesc(const LayerShape& shape, Mode mode, WeightType wt,
                    bool fused) {
  LayerDesc d = BenchDesc(shape, mode, wt);
  if (!fused) return d;
  if (shape.name == "gate_up") d.epilogue.silu_mul = true;
  if (IsResidual(shape)) {
    d.epilogue.num_binary = 1;
    d.epilogue.binary[0] = {BinaryOp::kAdd, DType::kBF16};
  }
  return d;
}

// The checkpoint format of a MoE model's experts: compressed-tensors
// (half a byte a weight) for s4, unpacked int8 for u4.
WeightFormat MoeFormat(WeightType wt) {
  return wt == WeightType::kS4 ? WeightFormat::kCompressedTensors
                               : WeightFormat::kUnpackedInt8;
}

// Adds a MoE model's fused MoE layer to every decoder layer of `copy`
// (one random checkpoint, imported by every layer: each holds its own
// packed experts), checking layer 0 of the plain variant against the
// float64 oracle at T = 1.
absl::Status BuildMoe(
    const ModelOptions& config, const ModelPreset& model, bool fused,
    int64_t max_m, const std::function<void(const std::string&)>& status_line,
    ModelCopy* copy, BenchReport* report) {
  const MoePreset& p = *model.moe;
  const MoeDesc d = MoePresetDesc(p, copy->mode, config.weight_type);
  const int layers = config.model_layers;
  copy->hidden = d.hidden;
  copy->top_k = p.top_k;
  copy->moe_accumulate = fused;
  copy->moe_in = BenchActivations(max_m, d.hidden, 0x30E1);
  copy->moe_out.assign(static_cast<size_t>(max_m * d.hidden), 0);
  if (status_line) {
    status_line(absl::StrFormat("packing %s: %d random experts...",
                                ImplOf(copy->mode), d.experts));
  }
  absl::StatusOr<check::MoeCheckpoint> ckpt =
      check::RandomMoeCheckpoint(d, MoeFormat(config.weight_type), 0x30E);
  if (!ckpt.ok()) return ckpt.status();
  const MoeWeights weights = ckpt->Stacked();
  LayerInfo info;
  info.impl = ImplOf(copy->mode);
  info.layer = absl::StrCat("moe", fused ? " fused" : "");
  info.n = 2 * d.intermediate;
  info.k = d.hidden;
  info.group_size = d.group_size;
  const auto t0 = std::chrono::steady_clock::now();
  int64_t done_bytes = copy->weight_bytes;
  for (int l = 0; l < layers; ++l) {
    if (status_line) {
      status_line(absl::StrFormat(
          "packing %s: decoder layer %d/%d, %d experts (%s so far)",
          ImplOf(copy->mode), l + 1, layers, d.experts, Gb(done_bytes)));
    }
    absl::StatusOr<std::unique_ptr<MoeLayer>> layer =
        MoeLayer::Create(d, weights);
    if (!layer.ok()) return layer.status();
    done_bytes += static_cast<int64_t>((*layer)->packed_bytes());
    copy->moe.push_back(*std::move(layer));
  }
  const MoeLayer& first = *copy->moe[0];
  info.create_ms = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count() /
                   layers;
  info.packed_bytes = static_cast<int64_t>(first.packed_bytes());
  copy->expert_bytes = static_cast<int64_t>(first.expert_packed_bytes());
  for (const std::string& name : first.kernel_names()) {
    info.kernel += (info.kernel.empty() ? "" : "+") + name;
  }
  copy->compute = first.compute_at(1);
  report->model_layers.push_back(info);
  if (!fused) {
    const std::vector<int32_t> ids =
        MoeRouting(1, p.top_k, p.experts, false, 0x30E2);
    const std::vector<float> w(ids.size(), 1.0f / static_cast<float>(p.top_k));
    absl::Status s =
        first.Run(1, copy->moe_in.data(), d.hidden, ids.data(), w.data(),
                  p.top_k, copy->moe_out.data(), d.hidden);
    if (s.ok()) {
      const check::MoeExpected want = check::MoeOracle(
          d, *ckpt, 1, copy->moe_in.data(), d.hidden, ids.data(), w.data(),
          p.top_k, nullptr, d.hidden, false);
      const std::string bad =
          check::CompareMoe(d, want, 1, copy->moe_out.data(), d.hidden);
      if (!bad.empty()) s = absl::InternalError(bad);
    }
    if (!s.ok()) {
      return absl::InternalError(absl::StrCat(ImplOf(copy->mode), " ", p.name,
                                              " MoE is wrong: ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ModelCopy::Step(int64_t m, const RoutingPool* routing,
                             Part part) const {
  const size_t shapes = descs.size();
  const StepRoutingDraw* r = nullptr;
  if (!moe.empty() && part != Part::kAttention) {
    r = &routing->draws[routing->next];
    routing->next = (routing->next + 1) % routing->draws.size();
    routing->used.push_back(r->total());
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const size_t j = i % shapes;
    const LayerDesc& d = descs[j];
    const int64_t ldy = d.out_n();
    absl::Status s;
    if (part == Part::kMoe) {
      // The MoE layers alone.
    } else if (d.epilogue.num_binary == 1) {
      EpilogueInputs inputs;
      inputs.data[0] = out[j].data();
      inputs.ld[0] = ldy;
      s = layers[i]->Run(m, in[j].data(), d.k, out[j].data(), ldy, inputs);
    } else {
      s = layers[i]->Run(m, in[j].data(), d.k, out[j].data(), ldy);
    }
    if (!s.ok()) return s;
    if (j + 1 == shapes && !moe.empty() && part != Part::kAttention) {
      const size_t l = i / shapes;
      const int64_t at = static_cast<int64_t>(l) * m * top_k;
      MoeRunOptions options;
      options.accumulate = moe_accumulate;
      s = moe[l]->Run(m, moe_in.data(), hidden, r->ids.data() + at,
                      r->weights.data() + at, top_k, moe_out.data(), hidden,
                      options);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

const char* ImplOf(Mode mode) {
  return mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
}

absl::StatusOr<ModelCopy> BuildCopy(
    const ModelOptions& config, const ModelPreset& model, Mode mode,
    const CopySetting& setting, bool huge_pages, bool fused, int64_t max_m,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report) {
  ModelCopy copy;
  copy.mode = mode;
  copy.setting = setting;
  copy.huge_pages = huge_pages;
  LayerOptions options;
  options.huge_pages = huge_pages;
  const int layers = config.model_layers;
  const size_t shapes = model.layers.size();
  copy.layers.resize(static_cast<size_t>(layers) * shapes);
  const std::string variant = fused ? "fused" : "plain";
  int64_t done_bytes = 0;
  for (size_t j = 0; j < shapes; ++j) {
    const LayerShape& shape = model.layers[j];
    const LayerDesc desc = ModelDesc(shape, mode, config.weight_type, fused);
    copy.descs.push_back(desc);
    copy.in.push_back(
        BenchActivations(max_m, desc.k, 0x40DE1ull + static_cast<uint64_t>(j)));
    copy.out.emplace_back(static_cast<size_t>(max_m * desc.out_n()));
    // One checkpoint per shape, imported by every decoder layer: each
    // holds its own packed copy (all of them stream from DRAM), with
    // the same values.
    const internal::CanonicalWeights w =
        BenchWeights(desc, 0x40DE1ull + static_cast<uint64_t>(j));
    absl::StatusOr<internal::OwnedCheckpoint> ckpt =
        internal::ExportWeights(desc, w, WeightFormat::kUnpackedInt8);
    if (!ckpt.ok()) return ckpt.status();
    LayerInfo info;
    info.impl = ImplOf(mode);
    info.layer =
        absl::StrCat(shape.name, fused ? " fused" : "",
                     SpaceThen(ModelSettingLabel(setting.prefetch,
                                                 TuningLabel(setting.tuning))),
                     huge_pages ? " 2M" : "");
    info.n = shape.n;
    info.k = shape.k;
    info.group_size = shape.group_size;
    const auto t0 = std::chrono::steady_clock::now();
    for (int l = 0; l < layers; ++l) {
      if (status_line) {
        status_line(absl::StrFormat(
            "packing %s %s: decoder layer %d/%d, %s (%s so far)", ImplOf(mode),
            variant, l + 1, layers, shape.name, Gb(done_bytes)));
      }
      absl::StatusOr<std::unique_ptr<Layer>> layer =
          Layer::Create(desc, ckpt->view(), options);
      if (!layer.ok()) return layer.status();
      done_bytes += static_cast<int64_t>((*layer)->packed_bytes());
      copy.weight_bytes += static_cast<int64_t>((*layer)->packed_bytes());
      copy.layers[static_cast<size_t>(l) * shapes + j] = *std::move(layer);
    }
    const Layer& first = *copy.layers[j];
    info.create_ms = std::chrono::duration<double, std::milli>(
                         std::chrono::steady_clock::now() - t0)
                         .count() /
                     layers;
    info.packed_bytes = static_cast<int64_t>(first.packed_bytes());
    for (const std::string& name : first.kernel_names()) {
      info.kernel += (info.kernel.empty() ? "" : "+") + name;
    }
    report->model_layers.push_back(info);
    if (!fused) {
      absl::Status s = first.Run(1, copy.in[j].data(), desc.k,
                                 copy.out[j].data(), desc.out_n());
      if (s.ok()) {
        s = CheckLayerOutput(desc, w, 1, copy.in[j].data(), desc.k,
                             copy.out[j].data(), desc.out_n());
      }
      if (!s.ok()) {
        return absl::InternalError(absl::StrCat(ImplOf(mode), " ", shape.name,
                                                " is wrong: ", s.message()));
      }
    }
  }
  if (model.moe.has_value()) {
    if (absl::Status s =
            BuildMoe(config, model, fused, max_m, status_line, &copy, report);
        !s.ok()) {
      return s;
    }
  }
  return copy;
}

}  // namespace w4jit::perf
