#include "perf/lib/sections/moe_bench.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/numeric.h"
#include "check/layer_check.h"
#include "check/moe_check.h"
#include "perf/lib/ceilings/peak_loop_generator.h"
#include "perf/lib/report/row_metrics.h"
#include "runtime/formats/import.h"
#include "runtime/moe/moe_experts.h"
#include "w4jit/layer.hpp"
#include "w4jit/moe.hpp"
#include "w4jit/parallel.hpp"

namespace w4jit::perf {
namespace {

// One Layer per expert and projection, from the per-expert tensors.
struct ExpertLayers {
  std::vector<std::unique_ptr<Layer>> w13, w2;
};

absl::StatusOr<ExpertLayers> MakeExpertLayers(
    const MoeDesc& d, const check::MoeCheckpoint& ckpt) {
  ExpertLayers out;
  const LayerDesc d13 = internal::MoeW13Desc(d);
  for (int64_t e = 0; e < d.experts; ++e) {
    // A swigluoai checkpoint interleaves w13's gate and up rows; a layer
    // takes them as halves (a host's loop would split them once, too).
    internal::OwnedCheckpoint split;
    if (d.activation == Activation::kSwigluOai) {
      auto f = internal::ExportWeights(
          d13, internal::SplitInterleavedRows(ckpt.w13[e]),
          ckpt.w13_files[e].format);
      if (!f.ok()) return f.status();
      split = *std::move(f);
    }
    auto a = Layer::Create(d13, d.activation == Activation::kSwigluOai
                                    ? split.view()
                                    : ckpt.w13_files[e].view());
    if (!a.ok()) return a.status();
    auto b = Layer::Create(internal::MoeW2Desc(d), ckpt.w2_files[e].view());
    if (!b.ok()) return b.status();
    out.w13.push_back(*std::move(a));
    out.w2.push_back(*std::move(b));
  }
  return out;
}

// The per-expert loop: y (bf16) = sum over slots of w * down(gated(x)).
absl::Status RunLoop(const MoeDesc& d, const ExpertLayers& layers, int64_t t,
                     const uint8_t* x, const int32_t* ids, const float* w,
                     int64_t k, uint16_t* y) {
  const int64_t h = d.hidden, inter = d.intermediate;
  std::vector<float> acc(static_cast<size_t>(t * h), 0.0f);
  std::vector<uint16_t> xs;
  std::vector<float> mid, out;
  std::vector<int64_t> slots;
  for (int64_t e = 0; e < d.experts; ++e) {
    slots.clear();
    for (int64_t s = 0; s < t * k; ++s) {
      if (ids[s] == e) slots.push_back(s);
    }
    if (slots.empty()) continue;
    const int64_t m = static_cast<int64_t>(slots.size());
    xs.resize(static_cast<size_t>(m * h));
    for (int64_t r = 0; r < m; ++r) {
      std::memcpy(xs.data() + r * h, x + slots[r] / k * h * 2, h * 2);
    }
    mid.resize(static_cast<size_t>(m * inter));
    out.resize(static_cast<size_t>(m * h));
    if (absl::Status s = layers.w13[e]->Run(m, xs.data(), h, mid.data(), inter);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = layers.w2[e]->Run(m, mid.data(), inter, out.data(), h);
        !s.ok()) {
      return s;
    }
    for (int64_t r = 0; r < m; ++r) {
      float* dst = acc.data() + slots[r] / k * h;
      for (int64_t c = 0; c < h; ++c) dst[c] += w[slots[r]] * out[r * h + c];
    }
  }
  for (int64_t i = 0; i < t * h; ++i) y[i] = internal::F32ToBf16(acc[i]);
  return absl::OkStatus();
}

absl::Status BenchPreset(const MoePreset& p, Mode mode,
                         const MoeOptions& options,
                         const std::function<void(const std::string&)>& say,
                         std::vector<MoeBenchRow>* rows) {
  const MoeDesc d = MoePresetDesc(p, mode, options.weight_type);
  say(absl::StrFormat("%s %s: packing %d experts...", p.name, ToString(mode),
                      p.experts));
  absl::StatusOr<check::MoeCheckpoint> ckpt =
      check::RandomMoeCheckpoint(d, WeightFormat::kCompressedTensors, 0x30E);
  if (!ckpt.ok()) return ckpt.status();
  absl::StatusOr<std::unique_ptr<MoeLayer>> layer =
      MoeLayer::Create(d, ckpt->Stacked());
  if (!layer.ok()) return layer.status();
  absl::StatusOr<ExpertLayers> loop_layers = MakeExpertLayers(d, *ckpt);
  if (!loop_layers.ok()) return loop_layers.status();
  // The experts' op at one routed row (a decode step's): one peak serves
  // every token count.
  const std::optional<PeakOp> op = PeakOpOf((*layer)->compute_at(1));
  absl::StatusOr<ComputePeak> peak =
      op ? MeasureComputePeak(*op, options.roofline)
         : absl::UnavailableError("the reference path");
  const double expert_bytes =
      static_cast<double>((*layer)->expert_packed_bytes());
  for (bool skewed : {false, true}) {
    for (int64_t t : options.tokens) {
      const int64_t k = p.top_k;
      const std::vector<int32_t> ids =
          MoeRouting(t, k, p.experts, skewed, static_cast<uint32_t>(t));
      std::vector<float> w(ids.size(), 1.0f / static_cast<float>(k));
      const std::vector<uint8_t> x = check::RandomActivations(
          internal::MoeW13Desc(d), t, p.hidden, 0xAC7u);
      std::vector<uint16_t> y(static_cast<size_t>(t * p.hidden));
      // Checked first (small T only: the oracle runs in float64).
      if (t <= 4) {
        if (absl::Status s = (*layer)->Run(t, x.data(), p.hidden, ids.data(),
                                           w.data(), k, y.data(), p.hidden);
            !s.ok()) {
          return s;
        }
        const check::MoeExpected want =
            check::MoeOracle(d, *ckpt, t, x.data(), p.hidden, ids.data(),
                             w.data(), k, nullptr, p.hidden, false);
        const std::string bad =
            check::CompareMoe(d, want, t, y.data(), p.hidden);
        if (!bad.empty()) {
          return absl::InternalError(
              absl::StrCat(p.name, " ", ToString(mode), " T = ", t, ": ", bad));
        }
      }
      std::vector<uint16_t> y_loop(y.size());
      const std::vector<absl::StatusOr<TimingResult>> timed = TimeInterleaved(
          {[&] {
             return (*layer)->Run(t, x.data(), p.hidden, ids.data(), w.data(),
                                  k, y.data(), p.hidden);
           },
           [&] {
             return RunLoop(d, *loop_layers, t, x.data(), ids.data(), w.data(),
                            k, y_loop.data());
           }},
          options.timing);
      for (const auto& r : timed) {
        if (!r.ok()) return r.status();
      }
      MoeBenchRow row;
      row.preset = p.name;
      row.mode = mode;
      row.skewed = skewed;
      row.tokens = t;
      row.threads = GetNumThreads();
      row.min_us = timed[0]->min_us;
      row.median_us = timed[0]->median_us;
      row.loop_min_us = timed[1]->min_us;
      row.loop_median_us = timed[1]->median_us;
      row.touched_experts = static_cast<int64_t>(
          std::set<int32_t>(ids.begin(), ids.end()).size());
      row.touched_bytes =
          expert_bytes * static_cast<double>(row.touched_experts);
      absl::StatusOr<ReadBandwidth> bw = MeasureReadBandwidth(
          static_cast<int64_t>(row.touched_bytes), "moe", options.roofline);
      if (!bw.ok()) return bw.status();
      row.read_bytes_per_s = bw->bytes_per_s;
      row.macs = 3.0 * static_cast<double>(t * k) *
                 static_cast<double>(p.hidden * p.intermediate);
      row.peak_macs_per_s = peak.ok() ? peak->macs_per_s : 0.0;
      say(
          absl::StrFormat("  %s T=%d: min %.1f us, p50 %.1f us; per-expert "
                          "loop min %.1f us",
                          skewed ? "skewed" : "uniform", t, row.min_us,
                          row.median_us, row.loop_min_us));
      rows->push_back(row);
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int32_t> MoeRouting(int64_t t, int64_t k, int64_t experts,
                                bool skewed, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> all(static_cast<size_t>(experts));
  std::vector<int32_t> ids;
  for (int64_t e = 0; e < experts; ++e) all[e] = static_cast<int32_t>(e);
  for (int64_t i = 0; i < t; ++i) {
    std::shuffle(all.begin(), all.end(), rng);
    if (skewed) {
      std::iter_swap(all.begin(), std::find(all.begin(), all.end(), 0));
    }
    ids.insert(ids.end(), all.begin(), all.begin() + k);
  }
  return ids;
}

const MoePreset* FindMoePreset(const std::string& name) {
  for (const MoePreset& p : MoePresets()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::string MoePresetNames() {
  std::vector<std::string> names;
  for (const MoePreset& p : MoePresets()) names.push_back(p.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<std::vector<MoeBenchRow>> RunMoeBench(
    const MoeOptions& options,
    const std::function<void(const std::string&)>& say) {
  std::vector<MoeBenchRow> rows;
  for (const std::string& name : options.presets) {
    const MoePreset* p = FindMoePreset(name);
    if (p == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--models: unknown '", name, "' (have ", MoePresetNames(), ")"));
    }
    for (Mode mode : options.modes) {
      if (absl::Status s = BenchPreset(*p, mode, options, say, &rows);
          !s.ok()) {
        return s;
      }
    }
  }
  return rows;
}

}  // namespace w4jit::perf
