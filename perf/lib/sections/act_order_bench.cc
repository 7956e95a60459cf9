#include "perf/lib/sections/act_order_bench.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "check/layer_check.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/output_check.h"
#include "perf/lib/timing/checked_timing.h"
#include "perf/lib/timing/timing.h"
#include "runtime/formats/import.h"
#include "w4jit/layer.hpp"

namespace w4jit::perf {
namespace {

// A layer made from `w` exported as a GPTQ v1 checkpoint (with g_idx when
// w has a k_perm), and the weights it is checked against.
struct Variant {
  internal::CanonicalWeights weights;
  std::unique_ptr<Layer> layer;
};

absl::StatusOr<Variant> MakeVariant(const LayerDesc& desc,
                                    internal::CanonicalWeights w) {
  absl::StatusOr<internal::OwnedCheckpoint> ckpt =
      internal::ExportWeights(desc, w, WeightFormat::kGptqV1);
  if (!ckpt.ok()) return ckpt.status();
  absl::StatusOr<std::unique_ptr<Layer>> layer =
      Layer::Create(desc, ckpt->view());
  if (!layer.ok()) return layer.status();
  return Variant{std::move(w), *std::move(layer)};
}

// Checks the variants at M and times them interleaved into `row`. `copy`
// is a second plain layer from the same checkpoint: how far two identical
// layers differ (weights at other addresses, huge pages or not) is the
// noise floor of the act-order cost.
void TimeRow(const LayersOptions& config, const LayerDesc& desc,
             const Variant& plain, const Variant& act, const Variant& copy,
             ActOrderRow* row) {
  const int64_t m = row->m, n = desc.n, k = desc.k;
  const std::vector<uint16_t> x =
      BenchActivations(m, k, 0xAC70ull + static_cast<uint64_t>(m));
  std::vector<uint16_t> y_plain(static_cast<size_t>(m * n));
  std::vector<uint16_t> y_act(static_cast<size_t>(m * n));
  std::vector<uint16_t> y_copy(static_cast<size_t>(m * n));
  const Contender run_plain = [&] {
    return plain.layer->Run(m, x.data(), k, y_plain.data(), n);
  };
  const Contender run_act = [&] {
    return act.layer->Run(m, x.data(), k, y_act.data(), n);
  };
  const Contender run_copy = [&] {
    return copy.layer->Run(m, x.data(), k, y_copy.data(), n);
  };
  absl::Status s = run_plain();
  if (s.ok()) s = run_act();
  if (s.ok()) s = run_copy();
  if (s.ok() && y_copy != y_plain) {
    s = absl::InternalError("two layers from one checkpoint differ");
  }
  if (s.ok()) {
    s = CheckLayerOutput(desc, plain.weights, m, x.data(), k, y_plain.data(),
                         n);
  }
  if (s.ok()) {
    s = CheckLayerOutput(desc, act.weights, m, x.data(), k, y_act.data(), n);
    if (!s.ok()) row->status = RowStatus::kFailed;
  }
  if (!s.ok()) {
    if (row->status == RowStatus::kOk) row->status = RowStatus::kError;
    row->note = std::string(s.message());
    return;
  }
  const std::vector<absl::StatusOr<TimingResult>> r =
      TimeInterleaved({run_plain, run_act, run_copy}, config.timing);
  for (const auto& one : r) {
    if (!TakeSamples(one, row)) return;
  }
  row->samples = std::min({r[0]->samples, r[1]->samples, r[2]->samples});
  row->plain_p50_us = r[0]->median_us;
  row->plain_min_us = r[0]->min_us;
  row->act_p50_us = r[1]->median_us;
  row->act_min_us = r[1]->min_us;
  row->copy_p50_us = r[2]->median_us;
  row->copy_min_us = r[2]->min_us;
}

}  // namespace

absl::Status RunActOrder(const LayersOptions& config,
                         const std::function<void(const std::string&)>& say,
                         BenchReport* report) {
  for (const LayerShape& shape : config.layers) {
    for (Mode mode : config.modes) {
      const LayerDesc desc = BenchDesc(shape, mode, config.weight_type);
      ActOrderRow base;
      base.impl = mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
      base.layer = shape.name;
      base.n = shape.n;
      base.k = shape.k;
      base.group_size = shape.group_size;
      internal::CanonicalWeights w = BenchWeights(desc, 0xAC7ull);
      internal::CanonicalWeights permuted = w;
      permuted.k_perm = check::RandomActOrder(desc, 0xAC7u);
      absl::StatusOr<Variant> plain = MakeVariant(desc, w);
      absl::StatusOr<Variant> act = MakeVariant(desc, std::move(permuted));
      absl::StatusOr<Variant> copy = MakeVariant(desc, std::move(w));
      for (int64_t m : config.ms) {
        ActOrderRow row = base;
        row.m = m;
        if (!plain.ok() || !act.ok() || !copy.ok()) {
          row.status = RowStatus::kError;
          row.note = std::string(
              (!plain.ok() ? plain.status()
                           : (!act.ok() ? act.status() : copy.status()))
                  .message());
        } else {
          TimeRow(config, desc, *plain, *act, *copy, &row);
        }
        say(absl::StrFormat(
            "  act-order %s %s M=%d: p50 %.1f us plain, %.1f us act-order, "
            "%.1f us plain copy%s",
            row.impl, row.layer, m, row.plain_p50_us, row.act_p50_us,
            row.copy_p50_us,
            row.status == RowStatus::kOk ? "" : " (" + row.note + ")"));
        report->act_order.push_back(std::move(row));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
