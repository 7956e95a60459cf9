#include "perf/lib/sections/model_bench.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/sections/model_copy.h"
#include "perf/lib/sections/model_settings.h"
#include "perf/lib/sections/moe_bench.h"
#include "w4jit/tuning.hpp"

namespace w4jit::perf {

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