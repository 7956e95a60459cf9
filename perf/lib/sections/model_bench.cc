#include "perf/lib/sections/model_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "check/moe_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/output_check.h"
#include "perf/lib/sections/moe_bench.h"
#include "runtime/formats/import.h"
#include "runtime/moe/moe_experts.h"
#include "w4jit/layer.hpp"
#include "w4jit/moe.hpp"
#include "w4jit/tuning.hpp"

namespace w4jit::perf {
namespace {

constexpr double kGB = 1e9;

std::string Gb(int64_t bytes) {
  return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / kGB);
}

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

// What a copy was built under besides its mode: a --prefetch distance
// or a --tunings file (neither: the defaults).
struct CopySetting {
  int prefetch = -1;   // -1: none given
  std::string tuning;  // a file's path; empty: none given
};

// The label of a --tunings file in rows and layer names: its stem.
std::string TuningLabel(const std::string& path) {
  return path.empty() ? std::string()
                      : std::filesystem::path(path).stem().string();
}

// " label", or "" for an empty one.
std::string SpaceThen(const std::string& label) {
  return label.empty() ? label : absl::StrCat(" ", label);
}

// The routings a (copy, T) contender cycles through, one per call, and
// the distinct experts of each call it made, in order.
struct RoutingPool {
  std::vector<StepRoutingDraw> draws;
  mutable size_t next = 0;
  mutable std::vector<int64_t> used;
};

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
  int64_t weight_bytes = 0;          // the linears' packed bytes, all layers
  std::vector<std::string> kernels;  // every kernel the step runs
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
                    Part part = Part::kAll) const {
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
};

const char* ImplOf(Mode mode) {
  return mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
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
    const BenchConfig& config, const ModelPreset& model, bool fused,
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
    copy->kernels.push_back(name);
  }
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

// Builds `mode`'s copy of the model (variant `fused`), checking layer
// 0 of each plain shape against the reference at M = 1.
absl::StatusOr<ModelCopy> BuildCopy(
    const BenchConfig& config, const ModelPreset& model, Mode mode,
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
    for (const std::string& name : first.kernel_names()) {
      copy.kernels.push_back(name);
    }
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

// Makes the layers created from now on prefetch `distance` bytes
// ahead in both modes: a tuning file with that parameter for all shapes
// of each mode (so a MoE model's expert panels, whose shapes depend on the
// thread count, get it too), loaded (and then removed).
absl::Status InstallPrefetchTuning(const BenchConfig& config, int distance) {
  internal::TuningFile file;
  const internal::CpuProfile& cpu = internal::HostCpu();
  file.cpu_class = internal::CpuClassOf(cpu, internal::ActiveIsa());
  file.cpu_name = cpu.name;
  file.created = "w4jit bench --model --prefetch";
  for (Mode mode : config.modes) {
    internal::TuningEntry e;
    e.mode = mode;
    e.all_shapes = true;
    e.params = {{"prefetch_distance", distance}};
    file.entries.push_back(e);
  }
  const std::string path =
      (std::filesystem::temp_directory_path() /
       absl::StrCat("w4jit-model-prefetch-", getpid(), ".json"))
          .string();
  {
    std::ofstream f(path, std::ios::trunc);
    f << internal::TuningToJson(file);
    if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  }
  absl::Status s = LoadTuningFile(path);
  std::filesystem::remove(path);
  return s;
}

}  // namespace

int64_t EstimatePackedBytes(const LayerShape& shape, WeightType weight_type) {
  const int64_t groups = shape.group_size == -1
                             ? 1
                             : (shape.k + shape.group_size - 1) /
                                   std::max<int64_t>(1, shape.group_size);
  // Per column and group: a scale and a sum (8 bytes), or for u4 on the
  // f32-FMA flavour (AVX2, AVX-512 without BF16) the scale, z and 16 * z as
  // f32 (12 bytes; jit/w4a16_layout.h). The bf16-dot flavour folds u4 zero
  // points into 16-bit meta, so 12 also bounds it.
  const int64_t meta_bytes = weight_type == WeightType::kU4 ? 12 : 8;
  return shape.n * ((shape.k + 1) / 2) + shape.n * groups * meta_bytes +
         (shape.has_bias ? shape.n * 4 : 0);
}

std::vector<LayerShape> MoeExpertShapes(const MoePreset& p) {
  return {{"w13", 2 * p.intermediate, p.hidden, p.group_size, p.biases},
          {"w2", p.hidden, p.intermediate, p.group_size, p.biases}};
}

ModelMemory EstimateModelMemory(const BenchConfig& config,
                                const ModelPreset& model,
                                int64_t read_buffer_bytes) {
  ModelMemory m;
  int64_t largest = 0;
  for (const LayerShape& s : model.layers) {
    m.per_layer_bytes += EstimatePackedBytes(s, config.weight_type) *
                         static_cast<int64_t>(config.modes.size());
    // The canonical nibbles (a byte each) and the exported int8
    // checkpoint.
    largest = std::max(
        largest, 2 * s.n * s.k + EstimatePackedBytes(s, config.weight_type));
  }
  if (model.moe.has_value()) {
    // Every expert of the layer, packed, per mode; the import scratch is
    // the random checkpoint: canonical nibbles (a byte each), f32 scales
    // and u8 zero points, and the checkpoint twice (per expert and
    // stacked), at most as large as packed for s4 (compressed-tensors)
    // and a byte a weight for u4.
    int64_t moe_bytes = 0, moe_scratch = 0;
    for (const LayerShape& s : MoeExpertShapes(*model.moe)) {
      const int64_t packed = EstimatePackedBytes(s, config.weight_type);
      const int64_t groups =
          s.group_size == -1 ? 1 : (s.k + s.group_size - 1) / s.group_size;
      moe_bytes += packed;
      moe_scratch += s.n * s.k + s.n * groups * 5 +
                     2 * (config.weight_type == WeightType::kS4
                              ? packed
                              : s.n * s.k + s.n * groups * 8 + s.n * 4);
    }
    m.per_layer_bytes += model.moe->experts * moe_bytes *
                         static_cast<int64_t>(config.modes.size());
    largest = std::max(largest, model.moe->experts * moe_scratch);
  }
  const int64_t settings =
      std::max<int64_t>(1, static_cast<int64_t>(config.model_prefetch.size() +
                                                config.model_tunings.size())) *
      static_cast<int64_t>(config.model_huge_pages.size());
  m.per_layer_bytes *= settings;
  m.copies = settings * static_cast<int64_t>(config.modes.size());
  m.packed_bytes = m.per_layer_bytes * config.model_layers;
  m.read_buffer_bytes = read_buffer_bytes;
  m.scratch_bytes = largest;
  return m;
}

absl::StatusOr<int64_t> ParseMemAvailable(absl::string_view meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    const bool kb = absl::ConsumeSuffix(&line, "kB");
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &v) || v < 0) {
      break;
    }
    return kb ? v * 1024 : v;
  }
  return absl::NotFoundError("no MemAvailable line in /proc/meminfo");
}

absl::StatusOr<int64_t> MemAvailableBytes() {
  std::ifstream f("/proc/meminfo");
  if (!f) return absl::NotFoundError("cannot read /proc/meminfo");
  std::stringstream text;
  text << f.rdbuf();
  return ParseMemAvailable(text.str());
}

absl::Status CheckModelMemory(const BenchConfig& config,
                              const ModelMemory& need, int64_t available) {
  if (need.total() <= available) return absl::OkStatus();
  const int64_t room = available - need.read_buffer_bytes - need.scratch_bytes;
  const int64_t fit = need.per_layer_bytes > 0
                          ? std::max<int64_t>(0, room) / need.per_layer_bytes
                          : 0;
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--model=%s with %d layers in %d mode(s) needs %d bytes (%s: "
      "packed "
      "weights %s, read buffer %s, import scratch %s) but "
      "MemAvailable is %d "
      "bytes (%s); %s",
      config.model, config.model_layers, config.modes.size(), need.total(),
      Gb(need.total()), Gb(need.packed_bytes), Gb(need.read_buffer_bytes),
      Gb(need.scratch_bytes), available, Gb(available),
      fit > 0 ? absl::StrCat("--layers=", fit, " fits")
              : std::string("not even one layer fits")));
}

int64_t ModelReadBufferBytes() {
  const int64_t l3 = internal::HostCpu().l3_bytes > 0
                         ? internal::HostCpu().l3_bytes
                         : (int64_t{32} << 20);
  return std::max<int64_t>(8 * l3, int64_t{1} << 30);
}

int64_t StepRoutingDraw::total() const {
  int64_t sum = 0;
  for (int64_t d : distinct) sum += d;
  return sum;
}

int64_t DistinctExperts(const int32_t* ids, int64_t n) {
  return static_cast<int64_t>(std::set<int32_t>(ids, ids + n).size());
}

std::vector<StepRoutingDraw> DrawModelRouting(const MoePreset& moe, int layers,
                                              int64_t t, bool skewed, int draws,
                                              uint32_t seed) {
  std::vector<StepRoutingDraw> out;
  std::mt19937 weight_rng(seed ^ 0x9E3779B9u);
  std::uniform_real_distribution<float> unit(0.05f, 1.0f);
  for (int s = 0; s < draws; ++s) {
    StepRoutingDraw draw;
    for (int l = 0; l < layers; ++l) {
      const uint32_t layer_seed =
          seed + static_cast<uint32_t>(s) * 7919u + static_cast<uint32_t>(l);
      const std::vector<int32_t> ids =
          MoeRouting(t, moe.top_k, moe.experts, skewed, layer_seed);
      draw.distinct.push_back(
          DistinctExperts(ids.data(), static_cast<int64_t>(ids.size())));
      draw.ids.insert(draw.ids.end(), ids.begin(), ids.end());
      // Each token's weights: positive, summing to 1 (a renormalized
      // top-k softmax).
      for (int64_t i = 0; i < t; ++i) {
        float sum = 0.0f;
        const size_t at = draw.weights.size();
        for (int64_t j = 0; j < moe.top_k; ++j) {
          draw.weights.push_back(unit(weight_rng));
          sum += draw.weights.back();
        }
        for (int64_t j = 0; j < moe.top_k; ++j) draw.weights[at + j] /= sum;
      }
    }
    out.push_back(std::move(draw));
  }
  return out;
}

double MeanTimedExperts(const std::vector<int64_t>& per_call, int samples,
                        bool* exact) {
  // TimeInterleaved makes two untimed warm-up calls, then (for a step of
  // 5 ms or more) only timed ones: then the timed steps are the calls
  // after the first two. Else untimed calls interleave with the timed
  // ones, drawn from the same distribution: the mean of every call.
  size_t from = 0;
  *exact = per_call.size() == static_cast<size_t>(samples) + 2;
  if (*exact) from = 2;
  if (per_call.size() <= from) return 0.0;
  double sum = 0.0;
  for (size_t i = from; i < per_call.size(); ++i) {
    sum += static_cast<double>(per_call[i]);
  }
  return sum / static_cast<double>(per_call.size() - from);
}

void FillModelRowPeak(const TimingResult& peak, double peak_macs,
                      ModelRow* row) {
  const auto rate = [](double macs, double us) {
    return us > 0 ? macs / (us * 1e-6) / 1e9 : 0.0;
  };
  row->peak_gmacs = rate(peak_macs, peak.median_us);
  row->peak_gmacs_best = rate(peak_macs, peak.min_us);
  const double step_gmacs = rate(row->macs, row->time_ms * 1e3);
  const double step_gmacs_max = rate(row->macs, row->min_ms * 1e3);
  row->peak_pct =
      row->peak_gmacs > 0 ? 100.0 * step_gmacs / row->peak_gmacs : 0.0;
  row->peak_pct_min = row->peak_gmacs_best > 0
                          ? 100.0 * step_gmacs_max / row->peak_gmacs_best
                          : 0.0;
  // The bound that binds: the longer of the time to read the step's
  // bytes at the read's best rate and to do its MACs at the best peak.
  const double read_s =
      row->read_gbps_best > 0
          ? static_cast<double>(row->weight_bytes) / (row->read_gbps_best * kGB)
          : 0.0;
  const double compute_s =
      row->peak_gmacs_best > 0 ? row->macs / (row->peak_gmacs_best * 1e9) : 0.0;
  row->bound = read_s == 0.0 && compute_s == 0.0 ? ""
               : compute_s > read_s              ? kBoundCompute
                                                 : kBoundMemory;
}

void FillModelRowFigures(const TimingResult& step, const TimingResult& read,
                         double read_bytes, ModelRow* row) {
  row->samples = step.samples;
  row->time_ms = step.median_us * 1e-3;
  row->min_ms = step.min_us * 1e-3;
  row->p90_ms = step.p90_us * 1e-3;
  const auto rate = [](double bytes, double us) {
    return us > 0 ? bytes / (us * 1e-6) / kGB : 0.0;
  };
  const double bytes = static_cast<double>(row->weight_bytes);
  row->tokens_per_s =
      step.median_us > 0 ? static_cast<double>(row->m) / (step.median_us * 1e-6)
                         : 0.0;
  row->weight_gbps = rate(bytes, step.median_us);
  row->weight_gbps_max = rate(bytes, step.min_us);
  row->read_gbps = rate(read_bytes, read.median_us);
  row->read_gbps_best = rate(read_bytes, read.min_us);
  row->read_pct =
      row->read_gbps > 0 ? 100.0 * row->weight_gbps / row->read_gbps : 0.0;
  row->read_pct_min = row->read_gbps_best > 0
                          ? 100.0 * row->weight_gbps_max / row->read_gbps_best
                          : 0.0;
  row->tail = step.min_us > 0 ? step.p90_us / step.min_us : 0.0;
  row->read_tail = read.min_us > 0 ? read.p90_us / read.min_us : 0.0;
  // The whole model's, from the layers built: a step's time scales with
  // its decoder layers.
  if (row->model_layers > 0 && row->layers > 0) {
    const double scale = static_cast<double>(row->layers) / row->model_layers;
    row->model_tokens_per_s = row->tokens_per_s * scale;
    row->model_tokens_per_s_best =
        step.min_us > 0
            ? static_cast<double>(row->m) / (step.min_us * 1e-6) * scale
            : 0.0;
  }
}

absl::Status RunModelBench(
    const BenchConfig& config,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report) {
  const ModelPreset* preset = FindModelPreset(config.model);
  if (preset == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--model: unknown '",
                                                   config.model, "' (have ",
                                                   ModelPresetNames(), ")"));
  }
  return RunModelBenchOn(config, *preset, say, status_line, report);
}

absl::Status RunModelBenchOn(
    const BenchConfig& config, const ModelPreset& preset,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report) {
  if (config.model_layers < 1 || config.model_layers > preset.num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layers: ", config.model_layers, " is not in [1, ",
                     preset.num_layers, "] for ", preset.name));
  }
  // The preset with --group-size's group, where given.
  ModelPreset grouped = preset;
  if (config.model_group_size != 0) {
    for (LayerShape& s : grouped.layers) s.group_size = config.model_group_size;
    if (grouped.moe.has_value()) {
      grouped.moe->group_size = config.model_group_size;
    }
  }
  const ModelPreset* model = &grouped;
  const bool is_moe = model->moe.has_value();
  report->model = model->name;
  const int64_t read_bytes = ModelReadBufferBytes();
  const ModelMemory need = EstimateModelMemory(config, *model, read_bytes);
  absl::StatusOr<int64_t> available = MemAvailableBytes();
  if (!available.ok()) return available.status();
  if (absl::Status s = CheckModelMemory(config, need, *available); !s.ok()) {
    return s;
  }
  say(absl::StrFormat(
      "model %s%s: %d decoder layers x %d linears%s, at most %s packed per "
      "copy; "
      "MemAvailable %s",
      model->name,
      config.model_group_size == 0
          ? ""
          : absl::StrCat(" at group ", config.model_group_size),
      config.model_layers, model->layers.size(),
      is_moe ? absl::StrFormat(" + a MoE layer of %d experts (top-%d)",
                               model->moe->experts, model->moe->top_k)
             : "",
      Gb(need.packed_bytes / std::max<int64_t>(1, need.copies)),
      Gb(*available)));
  absl::StatusOr<std::unique_ptr<CeilingProbe>> probe =
      CeilingProbe::Read(read_bytes, 0.05);
  if (!probe.ok()) return probe.status();
  report->model_read_bytes = (*probe)->bytes();
  const double probe_units = (*probe)->units_per_run();

  struct Point {
    std::string step;
    int64_t m;
  };
  std::vector<Point> points;
  int64_t max_m = 1;
  for (int64_t m : config.ms) points.push_back({"decode", m});
  for (int64_t m : config.prefill_ms) points.push_back({"prefill", m});
  for (const Point& p : points) max_m = std::max(max_m, p.m);

  TimingOptions timing = config.timing;
  timing.min_reps = config.model_steps;
  timing.max_reps = config.model_steps;
  timing.min_time_s = 0.0;
  timing.budget_s = 1e9;  // bounded by the steps

  // A MoE model's routings: per T, one draw per call of a contender
  // (2 warm-up calls, then the timed steps), every decoder layer's, the
  // same for every mode and variant.
  std::vector<std::vector<StepRoutingDraw>> draws(points.size());
  if (is_moe) {
    for (size_t i = 0; i < points.size(); ++i) {
      draws[i] = DrawModelRouting(*model->moe, config.model_layers, points[i].m,
                                  config.model_skewed, config.model_steps + 2,
                                  0x5EED0u + static_cast<uint32_t>(i) * 65537u);
    }
  }

  for (const std::string& variant : config.model_variants) {
    const bool fused = variant == "fused";
    std::vector<ModelCopy> copies;
    std::vector<CopySetting> settings = {CopySetting{}};  // the defaults
    if (!config.model_prefetch.empty()) {
      settings.clear();
      for (int64_t d : config.model_prefetch) {
        settings.push_back({static_cast<int>(d), ""});
      }
    } else if (!config.model_tunings.empty()) {
      settings.clear();
      for (const std::string& t : config.model_tunings) {
        settings.push_back({-1, t == "default" ? "" : t});
      }
    }
    for (const CopySetting& setting : settings) {
      absl::Status s;
      if (setting.prefetch >= 0) {
        s = InstallPrefetchTuning(config, setting.prefetch);
      } else if (!config.model_tunings.empty()) {
        s = LoadTuningFile(setting.tuning);  // "" clears: the defaults
        if (!s.ok()) {
          s = absl::InvalidArgumentError(
              absl::StrCat("--tunings: ", setting.tuning, ": ", s.message()));
        }
      }
      if (!s.ok()) return s;
      for (bool huge : config.model_huge_pages) {
        for (Mode mode : config.modes) {
          absl::StatusOr<ModelCopy> copy =
              BuildCopy(config, *model, mode, setting, huge, fused, max_m,
                        status_line, report);
          if (!copy.ok()) return copy.status();
          copies.push_back(*std::move(copy));
        }
      }
    }
    if (!config.model_prefetch.empty() || !config.model_tunings.empty()) {
      (void)LoadTuningFile("");  // back to the defaults for what follows
    }
    if (status_line) status_line("");
    // One round: the read, a MoE model's compute peaks (one per mode's
    // instruction), then every mode at every M, one step each.
    std::vector<Contender> contenders = {[&] {
      (*probe)->RunShared();
      return absl::OkStatus();
    }};
    std::vector<PeakOp> peak_ops;
    std::vector<std::unique_ptr<CeilingProbe>> peaks;
    std::vector<size_t> peak_of_copy;
    if (is_moe) {
      for (const ModelCopy& copy : copies) {
        const PeakOp op = PeakOpFor(copy.mode, copy.kernels);
        auto it = std::find(peak_ops.begin(), peak_ops.end(), op);
        if (it == peak_ops.end()) {
          // A CPU without the instruction (the reference kernels ran):
          // no peak, the rows' peak figures stay 0.
          absl::StatusOr<std::unique_ptr<CeilingProbe>> peak =
              CeilingProbe::Compute(op, 0.05);
          peak_ops.push_back(op);
          peaks.push_back(peak.ok() ? *std::move(peak) : nullptr);
          it = peak_ops.end() - 1;
        }
        peak_of_copy.push_back(static_cast<size_t>(it - peak_ops.begin()));
      }
      for (const std::unique_ptr<CeilingProbe>& peak : peaks) {
        const CeilingProbe* p = peak.get();
        contenders.push_back([p] {
          if (p != nullptr) p->RunShared();
          return absl::OkStatus();
        });
      }
    }
    const size_t first_row = contenders.size();
    std::vector<ModelRow> rows;
    // One routing pool per row (stable addresses: the contenders hold
    // them).
    std::vector<std::unique_ptr<RoutingPool>> pools;
    std::vector<size_t> row_copy;
    std::vector<ModelCopy::Part> parts = {ModelCopy::Part::kAll};
    if (is_moe && config.model_parts) {
      parts.push_back(ModelCopy::Part::kAttention);
      parts.push_back(ModelCopy::Part::kMoe);
    }
    for (size_t c = 0; c < copies.size(); ++c) {
      const ModelCopy& copy = copies[c];
      for (size_t i = 0; i < points.size(); ++i) {
        for (ModelCopy::Part part : parts) {
          const Point& p = points[i];
          ModelRow row;
          row.impl = ImplOf(copy.mode);
          row.model = model->name;
          row.layers = config.model_layers;
          row.model_layers = model->num_layers;
          row.variant = variant;
          row.step = p.step;
          row.prefetch = copy.setting.prefetch;
          row.tuning = TuningLabel(copy.setting.tuning);
          row.huge_pages = copy.huge_pages;
          row.m = p.m;
          row.calls = static_cast<int64_t>(copy.layers.size());
          row.weight_bytes = copy.weight_bytes;
          auto pool = std::make_unique<RoutingPool>();
          if (is_moe) {
            row.routing = config.model_skewed ? "skewed" : "uniform";
            row.moe_calls = static_cast<int64_t>(copy.moe.size());
            row.attention_bytes = copy.weight_bytes;
            row.expert_bytes = copy.expert_bytes;
            pool->draws = draws[i];
            double macs = 0.0;
            for (const LayerShape& s : model->layers) {
              macs += static_cast<double>(s.n) * static_cast<double>(s.k);
            }
            macs += 3.0 * static_cast<double>(model->moe->top_k) *
                    static_cast<double>(model->moe->hidden) *
                    static_cast<double>(model->moe->intermediate);
            row.macs = macs * static_cast<double>(p.m) * config.model_layers;
            if (part != ModelCopy::Part::kAll) {
              double attention_macs = 0.0;
              for (const LayerShape& s : model->layers) {
                attention_macs +=
                    static_cast<double>(s.n) * static_cast<double>(s.k);
              }
              attention_macs *= static_cast<double>(p.m) * config.model_layers;
              if (part == ModelCopy::Part::kAttention) {
                row.part = "attention";
                row.macs = attention_macs;
                row.moe_calls = 0;
                pool->draws.clear();
              } else {
                row.part = "moe";
                row.macs -= attention_macs;
                row.calls = 0;
                row.attention_bytes = 0;
                row.weight_bytes = 0;
              }
            }
          }
          rows.push_back(row);
          row_copy.push_back(c);
          const int64_t m = p.m;
          const RoutingPool* routing = pool.get();
          pools.push_back(std::move(pool));
          contenders.push_back([&copy, m, routing, part] {
            return copy.Step(m, routing, part);
          });
        }
      }
    }
    say(absl::StrFormat(
        "timing %s: %d steps of each of %d mode/M points, "
        "interleaved with a %s read%s...",
        variant, config.model_steps, rows.size(), Gb(report->model_read_bytes),
        is_moe ? " and the modes' compute peaks" : ""));
    const std::vector<absl::StatusOr<TimingResult>> r =
        TimeInterleaved(contenders, timing);
    for (size_t i = 0; i < first_row; ++i) {
      if (!r[i].ok()) return r[i].status();
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      ModelRow& row = rows[i];
      const absl::StatusOr<TimingResult>& step = r[first_row + i];
      if (!step.ok()) {
        row.status = RowStatus::kError;
        row.note = std::string(step.status().message());
      } else {
        if (is_moe && row.part != "attention") {
          bool exact = false;
          const double experts =
              MeanTimedExperts(pools[i]->used, step->samples, &exact);
          row.experts_per_layer = experts / config.model_layers;
          row.weight_bytes =
              row.attention_bytes +
              static_cast<int64_t>(std::llround(
                  experts * static_cast<double>(row.expert_bytes)));
          if (!exact) {
            row.note = absl::StrFormat(
                "experts: the mean of all %d steps run (untimed ones "
                "interleaved)",
                pools[i]->used.size());
          }
        }
        FillModelRowFigures(*step, *r[0], probe_units, &row);
        if (is_moe) {
          const size_t peak = peak_of_copy[row_copy[i]];
          if (peaks[peak] != nullptr) {
            FillModelRowPeak(*r[1 + peak], peaks[peak]->units_per_run(), &row);
          }
        }
      }
      if (is_moe) {
        say(absl::StrFormat(
            "  %s %s %s T=%d: p50 %.1f ms (min %.1f, p90 %.1f), %.1f "
            "experts/layer, %.1f MB/step, %.0f%% (min %.0f%%) of the read's "
            "%.1f GB/s, %.0f%% (min %.0f%%) of the peak",
            row.impl, variant,
            row.part.empty() ? row.step : absl::StrCat(row.step, " ", row.part),
            row.m, row.time_ms, row.min_ms, row.p90_ms, row.experts_per_layer,
            row.weight_bytes / 1e6, row.read_pct, row.read_pct_min,
            row.read_gbps, row.peak_pct, row.peak_pct_min));
      } else {
        say(absl::StrFormat(
            "  %s %s %s%s M=%d: p50 %.1f ms (min %.1f, p90 %.1f), %.1f GB/s "
            "= %.0f%% of the read's %.1f GB/s",
            row.impl, variant, row.step,
            absl::StrCat(SpaceThen(ModelSettingLabel(row.prefetch, row.tuning)),
                         row.huge_pages ? " 2M pages" : ""),
            row.m, row.time_ms, row.min_ms, row.p90_ms, row.weight_gbps,
            row.read_pct, row.read_gbps));
      }
      report->model_rows.push_back(std::move(row));
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
