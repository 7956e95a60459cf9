#include "perf/lib/report/report_table.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace w4jit::perf {

TextTable::TextTable(std::string title, std::vector<std::string> head)
    : title_(std::move(title)) {
  rows_.push_back(std::move(head));
}

void TextTable::Add(std::vector<std::string> cells) {
  rows_.push_back(std::move(cells));
}

void TextTable::Add(std::vector<std::string> cells, const TimedRow& row,
                    const std::vector<std::string>& figures) {
  if (row.ok()) {
    cells.insert(cells.end(), figures.begin(), figures.end());
  } else {
    cells.push_back(ToString(row.status));
  }
  cells.push_back(row.note);
  rows_.push_back(std::move(cells));
}

std::string TextTable::str() const {
  std::vector<size_t> width;
  for (const auto& row : rows_) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i + 1 < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  std::string out =
      title_.empty() ? "" : absl::StrCat("\n== ", title_, " ==\n");
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i + 1 < row.size(); ++i) {
      absl::StrAppendFormat(&line, "%-*s ", width[i], row[i]);
    }
    line += row.back();
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

namespace {

std::string F(double v) { return absl::StrFormat("%.1f", v); }
std::string Pct(double v) {
  return v > 0 ? absl::StrFormat("%.0f%%", v) : std::string("-");
}

std::string Header(const BenchReport& r) {
  std::string out = absl::StrFormat(
      "w4jit %s bench, %s, %s\nCPU: %s, ISA tier %s, %d threads, oneDNN "
      "%s\n",
      r.w4jit_version, r.date_utc, r.preset,
      r.cpu.name.empty() ? "unknown" : r.cpu.name,
      internal::ToString(r.cpu.isa), r.threads, r.onednn_version);
  if (!r.wait_policy.empty())
    absl::StrAppend(&out, "waiting: ", r.wait_policy, "\n");
  std::string ceilings;
  for (const ComputePeak& p : r.roofline.peaks) {
    if (p.available) {
      absl::StrAppendFormat(&ceilings, " %s %.0f GMAC/s,", p.key,
                            p.macs_per_s * 1e-9);
    }
  }
  for (const ReadBandwidth& b : r.roofline.bandwidths) {
    absl::StrAppendFormat(&ceilings, " read %s %.0f GB/s,", b.label,
                          b.bytes_per_s * 1e-9);
  }
  if (!ceilings.empty()) {
    ceilings.pop_back();
    absl::StrAppend(&out, "ceilings (best of the run):", ceilings, "\n");
  }
  return out;
}

std::string Layers(const BenchReport& r) {
  TextTable t(
      "layers: p50 and min per call; roof% = the binding bound's "
      "time / p50",
      {"impl", "layer", "M", "cache", "p50(us)", "min(us)", "GFLOP/s", "roof%",
       "binding bound", "op", "note"});
  for (const BenchRow& x : r.rows) {
    t.Add({x.impl, x.layer, absl::StrCat(x.m), x.cold ? "cold" : "hot"}, x,
          {F(x.time_us), F(x.min_us), F(x.gflops), Pct(x.roofline_pct),
           x.roofline_basis.empty() ? "-" : x.roofline_basis,
           x.compute_op.empty() ? "-" : x.compute_op});
  }
  return t.str();
}

std::string Scaling(const BenchReport& r) {
  TextTable t("scaling: one layer on each backend and thread count",
              {"impl", "backend", "layer", "M", "threads", "p50(us)", "min(us)",
               "p90(us)", "note"});
  for (const ScalingRow& x : r.scaling) {
    t.Add({x.impl, x.backend, x.layer, absl::StrCat(x.m),
           absl::StrCat(x.threads)},
          x, {F(x.time_us), F(x.min_us), F(x.p90_us)});
  }
  return t.str();
}

std::string ActOrder(const BenchReport& r) {
  TextTable t(
      "act-order: the same layer plain, with GPTQ act-order, and a "
      "second plain copy (noise floor)",
      {"impl", "layer", "M", "plain p50", "act p50", "copy p50", "note"});
  for (const ActOrderRow& x : r.act_order) {
    t.Add({x.impl, x.layer, absl::StrCat(x.m)}, x,
          {F(x.plain_p50_us), F(x.act_p50_us), F(x.copy_p50_us)});
  }
  return t.str();
}

std::string Accuracy(const BenchReport& r) {
  TextTable t(
      "accuracy: relative L2 error against float64",
      {"impl", "act_quant", "layer", "M", "rel err", "p50(us)", "note"});
  for (const AccuracyRow& x : r.accuracy) {
    t.Add({x.impl, x.act_quant.empty() ? "-" : x.act_quant, x.layer,
           absl::StrCat(x.m)},
          x, {absl::StrFormat("%.2e", x.rel_error), F(x.p50_us)});
  }
  return t.str();
}

std::string Model(const BenchReport& r) {
  TextTable t(absl::StrCat("model ", r.model, ": one step through it"),
              {"impl", "variant", "step", "part", "setting", "M", "p50(ms)",
               "min(ms)", "p90(ms)", "note"});
  for (const ModelRow& x : r.model_rows) {
    const std::string setting = ModelSettingLabel(x.prefetch, x.tuning);
    t.Add({x.impl, x.variant, x.step, x.part.empty() ? "step" : x.part,
           setting.empty() ? "-" : setting, absl::StrCat(x.m)},
          x, {F(x.time_ms), F(x.min_ms), F(x.p90_ms)});
  }
  return t.str();
}

std::string Moe(const BenchReport& r) {
  TextTable t("moe: the fused layer, and the loop a host writes without it",
              {"model", "mode", "routing", "T", "p50(us)", "min(us)",
               "loop p50", "note"});
  for (const MoeBenchRow& x : r.moe) {
    t.Add({x.preset, ToString(x.mode), x.skewed ? "skewed" : "uniform",
           absl::StrCat(x.tokens), F(x.median_us), F(x.min_us),
           F(x.loop_median_us), ""});
  }
  return t.str();
}

}  // namespace

std::string FormatReport(const BenchReport& report) {
  std::string out = Header(report);
  if (!report.rows.empty()) out += Layers(report);
  if (!report.scaling.empty()) out += Scaling(report);
  if (!report.act_order.empty()) out += ActOrder(report);
  if (!report.accuracy.empty()) out += Accuracy(report);
  if (!report.model_rows.empty()) out += Model(report);
  if (!report.moe.empty()) out += Moe(report);
  return out +
         "\nthe full tables, charts and comparisons: python3 -m w4jit.report "
         "<out>/bench.json\n";
}

}  // namespace w4jit::perf
