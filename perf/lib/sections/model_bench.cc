#include "perf/lib/sections/model_bench.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/output_check.h"
#include "runtime/formats/import.h"
#include "w4jit/layer.hpp"
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

// One mode's copy of the model: layers[l * shapes + j] is decoder
// layer l's j-th linear, with its input and output buffers per shape
// (bf16, max_m rows). A residual layer of the fused variant adds into
// its output in place, as a host adds o_proj and down into the hidden
// state.
struct ModelCopy {
  Mode mode = Mode::kW4A16;
  CopySetting setting;
  bool huge_pages = false;
  std::vector<LayerDesc> descs;  // per shape
  std::vector<std::unique_ptr<Layer>> layers;
  std::vector<std::vector<uint16_t>> in;  // per shape
  mutable std::vector<std::vector<uint16_t>> out;
  int64_t weight_bytes = 0;

  absl::Status Step(int64_t m) const {
    const size_t shapes = descs.size();
    for (size_t i = 0; i < layers.size(); ++i) {
      const size_t j = i % shapes;
      const LayerDesc& d = descs[j];
      const int64_t ldy = d.out_n();
      absl::Status s;
      if (d.epilogue.num_binary == 1) {
        EpilogueInputs inputs;
        inputs.data[0] = out[j].data();
        inputs.ld[0] = ldy;
        s = layers[i]->Run(m, in[j].data(), d.k, out[j].data(), ldy, inputs);
      } else {
        s = layers[i]->Run(m, in[j].data(), d.k, out[j].data(), ldy);
      }
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }
};

const char* ImplOf(Mode mode) {
  return mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
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
  return copy;
}

// Makes the layers created from now on prefetch `distance` bytes
// ahead in both modes: a tuning file with that parameter for every
// shape of the model, loaded (and then removed).
absl::Status InstallPrefetchTuning(const ModelPreset& model,
                                   const BenchConfig& config, int distance) {
  internal::TuningFile file;
  const internal::CpuProfile& cpu = internal::HostCpu();
  file.cpu_class = internal::CpuClassOf(cpu, internal::ActiveIsa());
  file.cpu_name = cpu.name;
  file.created = "w4jit bench --model --prefetch";
  for (const LayerShape& s : model.layers) {
    for (Mode mode : config.modes) {
      file.entries.push_back(
          {mode, s.n, s.k, s.group_size, {{"prefetch_distance", distance}}});
    }
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
}

absl::Status RunModelBench(
    const BenchConfig& config,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report) {
  const ModelPreset* preset = FindPreset(config.model);
  if (preset == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model: unknown '", config.model, "'"));
  }
  // The preset with --group-size's group, where given.
  ModelPreset grouped = *preset;
  if (config.model_group_size != 0) {
    for (LayerShape& s : grouped.layers) s.group_size = config.model_group_size;
  }
  const ModelPreset* model = &grouped;
  report->model = model->name;
  const int64_t read_bytes = ModelReadBufferBytes();
  const ModelMemory need = EstimateModelMemory(config, *model, read_bytes);
  absl::StatusOr<int64_t> available = MemAvailableBytes();
  if (!available.ok()) return available.status();
  if (absl::Status s = CheckModelMemory(config, need, *available); !s.ok()) {
    return s;
  }
  say(absl::StrFormat(
      "model %s%s: %d decoder layers x %d linears, at most %s packed per "
      "copy; "
      "MemAvailable %s",
      model->name,
      config.model_group_size == 0
          ? ""
          : absl::StrCat(" at group ", config.model_group_size),
      config.model_layers, model->layers.size(),
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
        s = InstallPrefetchTuning(*model, config, setting.prefetch);
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
    // One round: the read, then every mode at every M, one step each.
    std::vector<Contender> contenders = {[&] {
      (*probe)->RunShared();
      return absl::OkStatus();
    }};
    std::vector<ModelRow> rows;
    for (const ModelCopy& copy : copies) {
      for (const Point& p : points) {
        ModelRow row;
        row.impl = ImplOf(copy.mode);
        row.model = model->name;
        row.layers = config.model_layers;
        row.variant = variant;
        row.step = p.step;
        row.prefetch = copy.setting.prefetch;
        row.tuning = TuningLabel(copy.setting.tuning);
        row.huge_pages = copy.huge_pages;
        row.m = p.m;
        row.calls = static_cast<int64_t>(copy.layers.size());
        row.weight_bytes = copy.weight_bytes;
        rows.push_back(row);
        const int64_t m = p.m;
        contenders.push_back([&copy, m] { return copy.Step(m); });
      }
    }
    say(
        absl::StrFormat("timing %s: %d steps of each of %d mode/M points, "
                        "interleaved with a %s read...",
                        variant, config.model_steps, rows.size(),
                        Gb(report->model_read_bytes)));
    const std::vector<absl::StatusOr<TimingResult>> r =
        TimeInterleaved(contenders, timing);
    if (!r[0].ok()) return r[0].status();
    for (size_t i = 0; i < rows.size(); ++i) {
      ModelRow& row = rows[i];
      if (!r[i + 1].ok()) {
        row.status = RowStatus::kError;
        row.note = std::string(r[i + 1].status().message());
      } else {
        FillModelRowFigures(*r[i + 1], *r[0], probe_units, &row);
      }
      say(absl::StrFormat(
          "  %s %s %s%s M=%d: p50 %.1f ms (min %.1f, p90 %.1f), %.1f GB/s = "
          "%.0f%% of the read's %.1f GB/s",
          row.impl, variant, row.step,
          absl::StrCat(SpaceThen(ModelSettingLabel(row.prefetch, row.tuning)),
                       row.huge_pages ? " 2M pages" : ""),
          row.m, row.time_ms, row.min_ms, row.p90_ms, row.weight_gbps,
          row.read_pct, row.read_gbps));
      report->model_rows.push_back(std::move(row));
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
