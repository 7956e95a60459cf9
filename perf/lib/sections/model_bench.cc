#include "perf/lib/sections/model_bench.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/report/row_metrics.h"
#include "perf/lib/sections/model_copy.h"
#include "perf/lib/sections/model_settings.h"
#include "perf/lib/sections/moe_bench.h"
#include "w4jit/tuning.hpp"

namespace w4jit::perf {
namespace {

using Say = std::function<void(const std::string&)>;

// A point the section times: a decode or prefill step at M (T) rows.
struct ModelPoint {
  std::string step;
  int64_t m;
};

std::vector<ModelPoint> ModelPoints(const ModelOptions& config) {
  std::vector<ModelPoint> points;
  for (int64_t m : config.ms) points.push_back({"decode", m});
  for (int64_t m : config.prefill_ms) points.push_back({"prefill", m});
  return points;
}

int64_t MaxM(const std::vector<ModelPoint>& points) {
  int64_t max_m = 1;
  for (const ModelPoint& p : points) max_m = std::max(max_m, p.m);
  return max_m;
}

// The preset with --group-size's group, where given.
ModelPreset WithModelGroupSize(const ModelPreset& preset, int64_t group) {
  ModelPreset grouped = preset;
  if (group != 0) {
    for (LayerShape& s : grouped.layers) s.group_size = group;
    if (grouped.moe.has_value()) grouped.moe->group_size = group;
  }
  return grouped;
}

// Checks that the section fits in MemAvailable, and says what it holds.
absl::Status CheckModelFits(const ModelOptions& config,
                            const ModelPreset& model, int64_t read_bytes,
                            const Say& say) {
  const ModelMemory need = EstimateModelMemory(config, model, read_bytes);
  absl::StatusOr<int64_t> available = MemAvailableBytes();
  if (!available.ok()) return available.status();
  if (absl::Status s = CheckModelMemory(config, need, *available); !s.ok()) {
    return s;
  }
  say(absl::StrFormat(
      "model %s%s: %d decoder layers x %d linears%s, at most %s packed per "
      "copy; "
      "MemAvailable %s",
      model.name,
      config.model_group_size == 0
          ? ""
          : absl::StrCat(" at group ", config.model_group_size),
      config.model_layers, model.layers.size(),
      model.moe.has_value()
          ? absl::StrFormat(" + a MoE layer of %d experts (top-%d)",
                            model.moe->experts, model.moe->top_k)
          : "",
      Gb(need.packed_bytes / std::max<int64_t>(1, need.copies)),
      Gb(*available)));
  return absl::OkStatus();
}

// config.model_steps timed steps per contender, however long they take.
TimingOptions ModelTiming(const ModelOptions& config) {
  TimingOptions timing = config.timing;
  timing.min_reps = config.model_steps;
  timing.max_reps = config.model_steps;
  timing.min_time_s = 0.0;
  timing.budget_s = 1e9;  // bounded by the steps
  return timing;
}

// A MoE model's routings: per T, one draw per call of a contender
// (2 warm-up calls, then the timed steps), every decoder layer's, the
// same for every mode and variant. None for a dense model.
std::vector<std::vector<StepRoutingDraw>> DrawPointRoutings(
    const ModelOptions& config, const ModelPreset& model,
    const std::vector<ModelPoint>& points) {
  std::vector<std::vector<StepRoutingDraw>> draws(points.size());
  if (!model.moe.has_value()) return draws;
  for (size_t i = 0; i < points.size(); ++i) {
    draws[i] = DrawModelRouting(*model.moe, config.model_layers, points[i].m,
                                config.model_skewed, config.model_steps + 2,
                                0x5EED0u + static_cast<uint32_t>(i) * 65537u);
  }
  return draws;
}

// Every copy of variant `fused`: per setting, page size and mode, in that
// order; the tuning is back to the defaults afterwards.
absl::StatusOr<std::vector<ModelCopy>> BuildVariantCopies(
    const ModelOptions& config, const ModelPreset& model, bool fused,
    int64_t max_m, const Say& status_line, BenchReport* report) {
  std::vector<ModelCopy> copies;
  for (const CopySetting& setting : CopySettings(config)) {
    if (absl::Status s = ApplyCopySetting(config, setting); !s.ok()) return s;
    for (bool huge : config.model_huge_pages) {
      for (Mode mode : config.modes) {
        absl::StatusOr<ModelCopy> copy =
            BuildCopy(config, model, mode, setting, huge, fused, max_m,
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
  return copies;
}

// A MoE model's compute peaks, one per instruction its copies' modes
// run; probes[i] is null where the CPU lacks the instruction (the
// reference kernels ran: the rows' peak figures stay 0).
struct PeakProbes {
  std::vector<std::optional<PeakOp>> ops;
  std::vector<std::unique_ptr<CeilingProbe>> probes;
  std::vector<size_t> of_copy;  // the probe of each copy
};

PeakProbes MakePeakProbes(const std::vector<ModelCopy>& copies) {
  PeakProbes peaks;
  for (const ModelCopy& copy : copies) {
    const std::optional<PeakOp> op = PeakOpOf(copy.compute);
    auto it = std::find(peaks.ops.begin(), peaks.ops.end(), op);
    if (it == peaks.ops.end()) {
      absl::StatusOr<std::unique_ptr<CeilingProbe>> peak =
          op ? CeilingProbe::Compute(*op, 0.05)
             : absl::UnavailableError("the reference path");
      peaks.ops.push_back(op);
      peaks.probes.push_back(peak.ok() ? *std::move(peak) : nullptr);
      it = peaks.ops.end() - 1;
    }
    peaks.of_copy.push_back(static_cast<size_t>(it - peaks.ops.begin()));
  }
  return peaks;
}

// The rows of one variant, each with the copy it steps and the routings
// it cycles through (on the heap: the contenders hold them).
struct PlannedRows {
  std::vector<ModelRow> rows;
  std::vector<size_t> copy;
  std::vector<std::unique_ptr<RoutingPool>> pools;
};

// A MoE row's MACs, routing and byte counts for `part` of the step;
// `pool` gets the point's routings (none for the attention alone).
void PlanMoeRow(const ModelOptions& config, const ModelPreset& model,
                const ModelCopy& copy, const ModelPoint& p,
                ModelCopy::Part part, const std::vector<StepRoutingDraw>& draws,
                ModelRow* row, RoutingPool* pool) {
  row->routing = config.model_skewed ? "skewed" : "uniform";
  row->moe_calls = static_cast<int64_t>(copy.moe.size());
  row->attention_bytes = copy.weight_bytes;
  row->expert_bytes = copy.expert_bytes;
  pool->draws = draws;
  double macs = 0.0;
  for (const LayerShape& s : model.layers) {
    macs += static_cast<double>(s.n) * static_cast<double>(s.k);
  }
  macs += 3.0 * static_cast<double>(model.moe->top_k) *
          static_cast<double>(model.moe->hidden) *
          static_cast<double>(model.moe->intermediate);
  row->macs = macs * static_cast<double>(p.m) * config.model_layers;
  if (part == ModelCopy::Part::kAll) return;
  double attention_macs = 0.0;
  for (const LayerShape& s : model.layers) {
    attention_macs += static_cast<double>(s.n) * static_cast<double>(s.k);
  }
  attention_macs *= static_cast<double>(p.m) * config.model_layers;
  if (part == ModelCopy::Part::kAttention) {
    row->part = "attention";
    row->macs = attention_macs;
    row->moe_calls = 0;
    pool->draws.clear();
  } else {
    row->part = "moe";
    row->macs -= attention_macs;
    row->calls = 0;
    row->attention_bytes = 0;
    row->weight_bytes = 0;
  }
}

// Every copy at every point (and, a MoE model's with --parts, its
// attention and MoE parts alone), a row and a contender each, appended
// to `contenders` in row order.
PlannedRows PlanRows(const ModelOptions& config, const ModelPreset& model,
                     const std::string& variant,
                     const std::vector<ModelCopy>& copies,
                     const std::vector<ModelPoint>& points,
                     const std::vector<std::vector<StepRoutingDraw>>& draws,
                     std::vector<Contender>* contenders) {
  const bool is_moe = model.moe.has_value();
  std::vector<ModelCopy::Part> parts = {ModelCopy::Part::kAll};
  if (is_moe && config.model_parts) {
    parts.push_back(ModelCopy::Part::kAttention);
    parts.push_back(ModelCopy::Part::kMoe);
  }
  PlannedRows planned;
  for (size_t c = 0; c < copies.size(); ++c) {
    const ModelCopy& copy = copies[c];
    for (size_t i = 0; i < points.size(); ++i) {
      for (ModelCopy::Part part : parts) {
        const ModelPoint& p = points[i];
        ModelRow row;
        row.impl = ImplOf(copy.mode);
        row.model = model.name;
        row.layers = config.model_layers;
        row.model_layers = model.num_layers;
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
          PlanMoeRow(config, model, copy, p, part, draws[i], &row, pool.get());
        }
        planned.rows.push_back(row);
        planned.copy.push_back(c);
        const int64_t m = p.m;
        const RoutingPool* routing = pool.get();
        planned.pools.push_back(std::move(pool));
        contenders->push_back(
            [&copy, m, routing, part] { return copy.Step(m, routing, part); });
      }
    }
  }
  return planned;
}

// A MoE row's experts per layer and weight bytes, from the distinct
// experts its timed steps touched.
void CountTimedExperts(const ModelOptions& config, const RoutingPool& pool,
                       int samples, ModelRow* row) {
  bool exact = false;
  const double experts = MeanTimedExperts(pool.used, samples, &exact);
  row->experts_per_layer = experts / config.model_layers;
  row->weight_bytes = row->attention_bytes +
                      static_cast<int64_t>(std::llround(
                          experts * static_cast<double>(row->expert_bytes)));
  if (!exact) {
    row->note = absl::StrFormat(
        "experts: the mean of all %d steps run (untimed ones "
        "interleaved)",
        pool.used.size());
  }
}

// The log line of a finished row.
std::string ModelRowLine(const ModelRow& row, const std::string& variant,
                         bool is_moe) {
  if (is_moe) {
    return absl::StrFormat(
        "  %s %s %s T=%d: p50 %.1f ms (min %.1f, p90 %.1f), %.1f "
        "experts/layer, %.1f MB/step",
        row.impl, variant,
        row.part.empty() ? row.step : absl::StrCat(row.step, " ", row.part),
        row.m, row.time_ms, row.min_ms, row.p90_ms, row.experts_per_layer,
        row.weight_bytes / 1e6);
  }
  return absl::StrFormat(
      "  %s %s %s%s M=%d: p50 %.1f ms (min %.1f, p90 %.1f), the read "
      "%.1f GB/s",
      row.impl, variant, row.step,
      absl::StrCat(SpaceThen(ModelSettingLabel(row.prefetch, row.tuning)),
                   row.huge_pages ? " 2M pages" : ""),
      row.m, row.time_ms, row.min_ms, row.p90_ms, row.read_gbps);
}

// Builds variant `variant`'s copies, times them in rounds with the read
// probe (and a MoE model's compute peaks), and appends their rows.
absl::Status RunModelVariant(
    const ModelOptions& config, const ModelPreset& model,
    const std::string& variant, const std::vector<ModelPoint>& points,
    const std::vector<std::vector<StepRoutingDraw>>& draws,
    const CeilingProbe& probe, const Say& say, const Say& status_line,
    BenchReport* report) {
  const bool is_moe = model.moe.has_value();
  absl::StatusOr<std::vector<ModelCopy>> copies = BuildVariantCopies(
      config, model, variant == "fused", MaxM(points), status_line, report);
  if (!copies.ok()) return copies.status();
  // One round: the read, a MoE model's compute peaks (one per mode's
  // instruction), then every mode at every M, one step each.
  std::vector<Contender> contenders = {[&probe] {
    probe.RunShared();
    return absl::OkStatus();
  }};
  PeakProbes peaks;
  if (is_moe) peaks = MakePeakProbes(*copies);
  for (const std::unique_ptr<CeilingProbe>& peak : peaks.probes) {
    const CeilingProbe* p = peak.get();
    contenders.push_back([p] {
      if (p != nullptr) p->RunShared();
      return absl::OkStatus();
    });
  }
  const size_t first_row = contenders.size();
  PlannedRows planned =
      PlanRows(config, model, variant, *copies, points, draws, &contenders);
  say(
      absl::StrFormat("timing %s: %d steps of each of %d mode/M points, "
                      "interleaved with a %s read%s...",
                      variant, config.model_steps, planned.rows.size(),
                      Gb(report->model_read_bytes),
                      is_moe ? " and the modes' compute peaks" : ""));
  const std::vector<absl::StatusOr<TimingResult>> r =
      TimeInterleaved(contenders, ModelTiming(config));
  for (size_t i = 0; i < first_row; ++i) {
    if (!r[i].ok()) return r[i].status();
  }
  for (size_t i = 0; i < planned.rows.size(); ++i) {
    ModelRow& row = planned.rows[i];
    const absl::StatusOr<TimingResult>& step = r[first_row + i];
    if (!step.ok()) {
      row.status = RowStatus::kError;
      row.note = std::string(step.status().message());
    } else {
      if (is_moe && row.part != "attention") {
        CountTimedExperts(config, *planned.pools[i], step->samples, &row);
      }
      FillModelRowFigures(*step, *r[0], probe.units_per_run(), &row);
      if (is_moe) {
        const size_t peak = peaks.of_copy[planned.copy[i]];
        if (peaks.probes[peak] != nullptr) {
          FillModelRowPeak(*r[1 + peak], peaks.probes[peak]->units_per_run(),
                           &row);
        }
      }
    }
    say(ModelRowLine(row, variant, is_moe));
    report->model_rows.push_back(std::move(row));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunModelBench(
    const ModelOptions& config,
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
    const ModelOptions& config, const ModelPreset& preset,
    const std::function<void(const std::string&)>& say,
    const std::function<void(const std::string&)>& status_line,
    BenchReport* report) {
  if (config.model_layers < 1 || config.model_layers > preset.num_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layers: ", config.model_layers, " is not in [1, ",
                     preset.num_layers, "] for ", preset.name));
  }
  const ModelPreset model = WithModelGroupSize(preset, config.model_group_size);
  report->model = model.name;
  const int64_t read_bytes = ModelReadBufferBytes();
  if (absl::Status s = CheckModelFits(config, model, read_bytes, say);
      !s.ok()) {
    return s;
  }
  absl::StatusOr<std::unique_ptr<CeilingProbe>> probe =
      CeilingProbe::Read(read_bytes, 0.05);
  if (!probe.ok()) return probe.status();
  report->model_read_bytes = (*probe)->bytes();
  const std::vector<ModelPoint> points = ModelPoints(config);
  const std::vector<std::vector<StepRoutingDraw>> draws =
      DrawPointRoutings(config, model, points);
  for (const std::string& variant : config.model_variants) {
    if (absl::Status s = RunModelVariant(config, model, variant, points, draws,
                                         **probe, say, status_line, report);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
