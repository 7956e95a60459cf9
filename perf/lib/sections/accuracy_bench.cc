#include "perf/lib/sections/accuracy_bench.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "check/accuracy.h"
#include "check/layer_check.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/output_check.h"
#include "perf/lib/timing/checked_timing.h"
#include "perf/lib/timing/timing.h"
#include "w4jit/layer.hpp"

namespace w4jit::perf {
namespace {

// The three variants, in the order of their rows.
struct Variant {
  LayerDesc desc;
  std::unique_ptr<Layer> layer;
  double rel_error = 0.0;
};

std::vector<LayerDesc> VariantDescs(const LayerShape& shape, WeightType type) {
  const LayerDesc w4a16 = BenchDesc(shape, Mode::kW4A16, type);
  LayerDesc per_token = BenchDesc(shape, Mode::kDA8W4, type);
  LayerDesc per_group = per_token;
  per_group.act_quant = ActQuant::kPerGroup;
  return {w4a16, per_token, per_group};
}

AccuracyRow BaseRow(const LayerShape& shape, const LayerDesc& desc,
                    const AccuracyOptions& config) {
  AccuracyRow row;
  row.impl = desc.mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
  row.layer = shape.name;
  row.n = shape.n;
  row.k = shape.k;
  row.group_size = shape.group_size;
  if (desc.mode == Mode::kDA8W4) row.act_quant = ToString(desc.act_quant);
  row.outliers = config.outliers;
  row.outlier_scale = config.outlier_scale;
  return row;
}

// Builds the variants and measures their errors; an error status names the
// variant that failed.
absl::Status MakeVariants(const AccuracyOptions& config,
                          const LayerShape& shape,
                          const internal::CanonicalWeights& w,
                          std::vector<Variant>* out) {
  const check::OutlierSpec spec{config.outliers, config.outlier_scale};
  for (const LayerDesc& desc : VariantDescs(shape, config.weight_type)) {
    absl::StatusOr<std::unique_ptr<Layer>> layer = check::MakeLayer(desc, w);
    if (!layer.ok()) return layer.status();
    out->push_back(Variant{desc, *std::move(layer), 0.0});
  }
  // One float64 oracle for all three (it does not depend on the mode).
  const int64_t rows = config.accuracy_rows;
  const std::vector<uint8_t> x =
      check::OutlierActivations(out->front().desc, rows, shape.k, spec, 0xACC);
  const std::vector<double> want =
      check::DequantMatmulF64(out->front().desc, w, rows, x.data(), shape.k);
  std::vector<uint8_t> y(static_cast<size_t>(rows * shape.n) *
                         internal::DTypeSize(DType::kF32));
  for (Variant& v : *out) {
    if (absl::Status s =
            v.layer->Run(rows, x.data(), shape.k, y.data(), shape.n);
        !s.ok()) {
      return s;
    }
    v.rel_error = check::RelativeL2Error(v.desc.out_dtype, y.data(), want);
  }
  return absl::OkStatus();
}

// Checks the variants at M and times them interleaved into rows[0..2].
void TimeRows(const AccuracyOptions& config,
              const internal::CanonicalWeights& w,
              const std::vector<Variant>& variants, const uint8_t* x,
              std::vector<AccuracyRow>* rows) {
  const int64_t m = rows->front().m, n = w.n, k = w.k;
  std::vector<std::vector<uint16_t>> y(
      variants.size(), std::vector<uint16_t>(static_cast<size_t>(m * n)));
  std::vector<Contender> contenders;
  for (size_t i = 0; i < variants.size(); ++i) {
    contenders.push_back(
        [&, i] { return variants[i].layer->Run(m, x, k, y[i].data(), n); });
  }
  for (size_t i = 0; i < variants.size(); ++i) {
    AccuracyRow& row = (*rows)[i];
    absl::Status s = contenders[i]();
    if (s.ok()) {
      s = CheckLayerOutput(variants[i].desc, w, m, x, k, y[i].data(), n);
      if (!s.ok()) row.status = RowStatus::kFailed;
    } else {
      row.status = RowStatus::kError;
    }
    if (!s.ok()) row.note = std::string(s.message());
  }
  for (const AccuracyRow& row : *rows) {
    if (!row.ok()) return;
  }
  const std::vector<absl::StatusOr<TimingResult>> r =
      TimeInterleaved(contenders, config.timing);
  for (size_t i = 0; i < r.size(); ++i) {
    AccuracyRow& row = (*rows)[i];
    if (!TakeSamples(r[i], &row)) continue;
    row.p50_us = r[i]->median_us;
    row.min_us = r[i]->min_us;
  }
}

}  // namespace

absl::Status RunAccuracy(const AccuracyOptions& config,
                         const std::function<void(const std::string&)>& say,
                         BenchReport* report) {
  const check::OutlierSpec spec{config.outliers, config.outlier_scale};
  const int64_t max_m = *std::max_element(config.ms.begin(), config.ms.end());
  for (const LayerShape& shape : config.layers) {
    const std::vector<LayerDesc> descs =
        VariantDescs(shape, config.weight_type);
    const LayerDesc& desc = descs[1];
    const internal::CanonicalWeights w = BenchWeights(desc, 0xACCull);
    std::vector<Variant> variants;
    const absl::Status made = MakeVariants(config, shape, w, &variants);
    // x of the largest M; each M times its first rows.
    const std::vector<uint8_t> x =
        made.ok() ? check::OutlierActivations(desc, max_m, shape.k, spec, 0xACD)
                  : std::vector<uint8_t>();
    for (int64_t m : config.ms) {
      std::vector<AccuracyRow> rows;
      for (size_t i = 0; i < descs.size(); ++i) {
        rows.push_back(BaseRow(shape, descs[i], config));
        rows.back().m = m;
        if (!made.ok()) {
          rows.back().status = RowStatus::kError;
          rows.back().note = std::string(made.message());
          continue;
        }
        rows.back().rel_error = variants[i].rel_error;
      }
      if (made.ok()) TimeRows(config, w, variants, x.data(), &rows);
      for (AccuracyRow& row : rows) {
        say(absl::StrFormat(
            "  accuracy %s %s %s M=%d: error %.2e, p50 %.1f us%s", row.impl,
            row.act_quant, row.layer, m, row.rel_error, row.p50_us,
            row.ok() ? "" : " (" + row.note + ")"));
        report->accuracy.push_back(std::move(row));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
