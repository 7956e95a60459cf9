// `w4jit bench model`'s copies of a model: one per mode and setting, every
// decoder layer's linears (and a MoE model's fused MoE layer) built from
// random weights, and a step that runs them all in order.
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_COPY_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_COPY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/report/bench_report.h"
#include "perf/lib/sections/model_routing.h"
#include "perf/lib/sections/model_settings.h"
#include "perf/model_presets.h"
#include "w4jit/layer.hpp"
#include "w4jit/moe.hpp"

namespace w4jit::perf {

// One mode's copy of the model: layers[l * shapes + j] is decoder
// layer l's j-th linear, with its input and output buffers per shape
// (bf16, max_m rows). A residual layer of the fused variant adds into
// its output in place, as a host adds o_proj and down into the hidden
// state. A MoE model's decoder layer l ends with moe[l], the fused MoE
// layer (accumulating into its output in the fused variant: the
// residual).
struct ModelCopy {
  Mode mode = Mode::kW4A16;
  CopySetting setting;
  bool huge_pages = false;
  std::vector<LayerDesc> descs;  // per shape
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<std::vector<uint16_t>> in;  // per shape
  mutable std::vector<std::vector<uint16_t>> out;
  int64_t weight_bytes = 0;  // the linears' packed bytes, all layers
  // What a MoE copy's experts compute with at one routed row (its peak
  // probe's instruction; Layer::compute_at).
  LayerCompute compute;
  // A MoE model's.
  std::vector<std::unique_ptr<MoeLayer>> moe;  // per decoder layer
  int64_t hidden = 0, top_k = 0;
  bool moe_accumulate = false;
  std::vector<uint16_t> moe_in;  // [max_m, H] bf16
  mutable std::vector<uint16_t> moe_out;
  int64_t expert_bytes = 0;  // MoeLayer::expert_packed_bytes

  // A step through every decoder layer: all of it, or (--parts) only
  // its linears or only its MoE layers.
  enum class Part { kAll, kAttention, kMoe };

  absl::Status Step(int64_t m, const RoutingPool* routing,
                    Part part = Part::kAll) const;
};

// The impl name of `mode`'s rows and layers (kImplW4a16, kImplDa8w4).
const char* ImplOf(Mode mode);

// Builds `mode`'s copy of the model (variant `fused`), checking layer
// 0 of each plain shape against the reference at M = 1.
absl::StatusOr<ModelCopy> BuildCopy(
    const ModelOptions& config, const ModelPreset& model, Mode mode,
    const CopySetting& setting, bool huge_pages, bool fused, int64_t max_m,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_COPY_H_
