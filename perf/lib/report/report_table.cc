#include "perf/lib/report/report_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "perf/lib/report/row_metrics.h"
#include "perf/lib/timing/timing.h"

namespace w4jit::perf {
namespace {

// The speedup summary splits decode-sized M (up to this) from larger M.
constexpr int64_t kDecodeMaxM = 8;

std::string Speedup(double s) {
  return s > 0 ? absl::StrFormat("%.2fx", s) : std::string("n/a");
}

double GeoMean(const std::vector<double>& v) {
  double log_sum = 0.0;
  for (double x : v) log_sum += std::log(x);
  return v.empty() ? 0.0 : std::exp(log_sum / static_cast<double>(v.size()));
}

// "geomean 1.85x (M<=8: 2.31x, M>8: 1.10x)", or "n/a".
std::string SpeedupSummary(const std::vector<const BenchRow*>& rows,
                           double BenchRow::*field) {
  std::vector<double> all, small, large;
  for (const BenchRow* r : rows) {
    const double s = r->*field;
    if (s <= 0) continue;
    all.push_back(s);
    (r->m <= kDecodeMaxM ? small : large).push_back(s);
  }
  if (all.empty()) return "n/a";
  std::string out = absl::StrFormat("geomean %.2fx", GeoMean(all));
  if (!small.empty() && !large.empty()) {
    absl::StrAppendFormat(&out, " (M<=%d: %.2fx, M>%d: %.2fx)", kDecodeMaxM,
                          GeoMean(small), kDecodeMaxM, GeoMean(large));
  }
  return out;
}

std::string FormatBytes(double bytes) {
  if (bytes >= 1e9) return absl::StrFormat("%.2f GB", bytes / 1e9);
  if (bytes >= 1e6) return absl::StrFormat("%.1f MB", bytes / 1e6);
  return absl::StrFormat("%.0f KB", bytes / 1e3);
}

// Replaces the register tile "_m<rows>x<cols>_" in a kernel name with
// "_m*_", so that the variants of one kernel read as one.
std::string WithoutTile(const std::string& name) {
  for (size_t i = name.find("_m"); i != std::string::npos;
       i = name.find("_m", i + 1)) {
    size_t j = i + 2;
    const auto digits = [&] {
      const size_t start = j;
      while (j < name.size() &&
             std::isdigit(static_cast<unsigned char>(name[j])))
        ++j;
      return j > start;
    };
    if (digits() && j < name.size() && name[j] == 'x' && (++j, digits()) &&
        j < name.size() && name[j] == '_') {
      return name.substr(0, i) + "_m*" + name.substr(j);
    }
  }
  return name;
}

}  // namespace

std::string ShortKernelNames(const std::string& names) {
  std::vector<std::pair<std::string, int>> kinds;
  for (absl::string_view part : absl::StrSplit(names, '+')) {
    const std::string kind = WithoutTile(std::string(part));
    auto it = std::find_if(kinds.begin(), kinds.end(),
                           [&](const auto& k) { return k.first == kind; });
    if (it == kinds.end()) {
      kinds.emplace_back(kind, 1);
    } else {
      ++it->second;
    }
  }
  std::vector<std::string> out;
  for (const auto& [kind, count] : kinds) {
    out.push_back(count > 1 ? absl::StrCat(kind, " (", count, " tiles)")
                            : kind);
  }
  return absl::StrJoin(out, " + ");
}

std::string ImplTitle(const std::string& impl) {
  if (impl == kImplW4a16) return "W4A16";
  if (impl == kImplDa8w4) return "DA8W4";
  if (impl == kImplOneDnnBf16) return "oneDNN bf16";
  if (impl == kImplOneDnnU8s8) return "oneDNN u8s8";
  return impl;
}

std::string FormatHeader(const BenchReport& r) {
  std::string out = absl::StrFormat(
      "w4jit %s bench, %s, preset %s\n"
      "CPU: %s (family 0x%x model 0x%x%s), ISA tier %s, L2 %s/core, L3 %s\n"
      "threads: %d, oneDNN %s\n%s\n",
      r.w4jit_version, r.date_utc, r.preset,
      r.cpu.name.empty() ? "unknown" : r.cpu.name, r.cpu.family, r.cpu.model,
      r.cpu.zen_generation > 0 ? absl::StrCat(", Zen ", r.cpu.zen_generation)
                               : "",
      internal::ToString(r.cpu.isa), FormatBytes(r.cpu.l2_bytes),
      FormatBytes(r.cpu.l3_bytes), r.threads, r.onednn_version,
      r.wait_policy.empty() ? ""
                            : absl::StrCat("waiting: ", r.wait_policy, "\n"));
  if (std::find(r.impls.begin(), r.impls.end(), kImplOneDnnU8s8) !=
      r.impls.end()) {
    absl::StrAppend(
        &out,
        "peers: oneDNN dense matmul, weights reordered once to its preferred "
        "layout; u8s8 takes\n  already-quantized u8 activations (not timed) "
        "and writes f32 with per-channel scales;\n  bf16 writes bf16.\n");
  }
  if (r.roofline.peaks.empty() && r.roofline.bandwidths.empty()) return out;
  absl::StrAppendFormat(
      &out,
      "roofline: a row's roofline time is the larger of two bounds: its "
      "weight bytes at the\n  read rate measured at its footprint (memory: "
      "\"L3 read 16.8 MB\" names the level\n  and the probe's footprint) "
      "and its M*N*K MACs at the compute peak of the\n  kernel's "
      "instruction (compute: \"peak bf16_dot_zmm\"). \"binding bound\" "
      "names the\n  larger; roof%% is roofline time / p50 (the share of "
      "the roofline the row\n  reaches), min%% the same of the min; ilv%% "
      "is the p50 against that bound's ceiling\n  timed interleaved with "
      "the row alone. Each ceiling below is the best of several\n  runs, "
      "raised to any higher interleaved timing of the same ceiling.\n\n"
      "ceilings (measured in this run, best of all timings, %d thread(s)):\n",
      r.threads);
  bool amx = false;
  for (const ComputePeak& p : r.roofline.peaks) {
    const bool tiles = IsAmxPeak(p);
    amx = amx || (tiles && p.available);
    if (p.available) {
      absl::StrAppendFormat(&out, "  %-14s %8.1f GMAC/s  %s, %d %s\n", p.key,
                            p.macs_per_s * 1e-9, p.description, p.chains,
                            tiles ? "tile accumulators" : "chains");
    } else {
      absl::StrAppendFormat(&out, "  %-14s %s\n", p.key, p.note);
    }
  }
  for (const ReadBandwidth& b : r.roofline.bandwidths) {
    absl::StrAppendFormat(
        &out, "  read %-24s %8.1f GB/s  (%s, %d-byte loads)\n", b.label,
        b.bytes_per_s * 1e-9, FormatBytes(b.bytes), b.vector_bytes);
  }
  if (amx) {
    absl::StrAppend(
        &out,
        "  (AMX: a peer whose implementation runs AMX tiles, e.g. oneDNN's "
        "brg:avx512_core_amx_*,\n   is judged against amx_int8 (u8s8) or "
        "amx_bf16 (bf16), never the vector peaks;\n   so is a w4jit row at "
        "an M its tile kernels run (docs/amx.md: from\n   amx_min_m rows): "
        "DA8W4 against amx_int8, W4A16 against amx_bf16)\n");
  }
  if (const ComputePeak* p = r.roofline.Peak("int8_avx2");
      p != nullptr && r.roofline.Peak("int8_vnni_zmm") == nullptr) {
    absl::StrAppend(
        &out,
        "  (no VNNI: int8_avx2, the exact 3-instruction emulation, is this "
        "CPU's int8 MAC peak;\n   the AVX2 DA8W4 kernels accumulate in int16 "
        "and are judged against int8_avx2_i16)\n");
  }
  return out;
}

std::string FormatTable(const BenchReport& report, const std::string& impl) {
  std::string out = absl::StrFormat(
      "\n== %s ==\n%-8s %5s %-5s %10s %10s %9s %8s %6s %6s %-22s %5s %7s "
      "%7s  %s\n",
      ImplTitle(impl), "layer", "M", "cache", "p50(us)", "min(us)", "GFLOP/s",
      "W GB/s", "roof%", "min%", "binding bound", "ilv%", "x bf16", "x u8s8",
      "kernel");
  for (const BenchRow& row : report.rows) {
    if (row.impl != impl) continue;
    absl::StrAppendFormat(&out, "%-8s %5d %-5s ", row.layer, row.m,
                          row.cold ? "cold" : "hot");
    if (!row.ok()) {
      absl::StrAppendFormat(&out, "%s: %s\n", ToString(row.status), row.note);
      continue;
    }
    const bool mode = row.impl == kImplW4a16 || row.impl == kImplDa8w4;
    absl::StrAppendFormat(
        &out,
        "%10.1f %10.1f %9.1f %8.1f %5.0f%% %5.0f%% %-22s %5s %7s %7s  %s%s\n",
        row.time_us, row.min_us, row.gflops, row.weight_gbps, row.roofline_pct,
        row.roofline_pct_min, row.roofline_basis,
        row.interleaved_pct > 0 ? absl::StrFormat("%.0f%%", row.interleaved_pct)
                                : std::string("-"),
        mode ? Speedup(row.speedup_vs_bf16) : "-",
        mode ? Speedup(row.speedup_vs_u8s8) : "-", ShortKernelNames(row.kernel),
        row.note.empty() ? "" : absl::StrCat("  [", row.note, "]"));
  }
  return out;
}

std::string FormatSummary(const BenchReport& report, const std::string& impl) {
  std::vector<const BenchRow*> ok;
  int failed = 0, unavailable = 0, errors = 0;
  // The shares of the binding bound (p50 and min), memory and compute.
  std::vector<double> memory_pct, memory_pct_min, compute_pct, compute_pct_min;
  for (const BenchRow& row : report.rows) {
    if (row.impl != impl) continue;
    if (row.status == RowStatus::kFailed) ++failed;
    if (row.status == RowStatus::kNotAvailable) ++unavailable;
    if (row.status == RowStatus::kError) ++errors;
    if (!row.ok()) continue;
    ok.push_back(&row);
    if (row.roofline_pct > 0) {
      const bool compute = row.bound == kBoundCompute;
      (compute ? compute_pct : memory_pct).push_back(row.roofline_pct);
      (compute ? compute_pct_min : memory_pct_min)
          .push_back(row.roofline_pct_min);
    }
  }
  std::string out =
      absl::StrFormat("%s summary: %d ok, %d FAILED, %d n/a", ImplTitle(impl),
                      ok.size(), failed, unavailable);
  if (errors > 0) absl::StrAppendFormat(&out, ", %d error", errors);
  if (impl == kImplW4a16 || impl == kImplDa8w4) {
    absl::StrAppend(&out, "; vs oneDNN u8s8 ",
                    SpeedupSummary(ok, &BenchRow::speedup_vs_u8s8),
                    "; vs oneDNN bf16 ",
                    SpeedupSummary(ok, &BenchRow::speedup_vs_bf16));
  }
  const auto share = [&](const char* what, std::vector<double> p50,
                         std::vector<double> min) {
    if (p50.empty()) return;
    absl::StrAppendFormat(
        &out, "; median %.0f%% of the %s bound (%d row%s; %.0f%% on the min)",
        Median(p50), what, p50.size(), p50.size() == 1 ? "" : "s", Median(min));
  };
  share(kBoundMemory, memory_pct, memory_pct_min);
  share(kBoundCompute, compute_pct, compute_pct_min);
  return out + "\n";
}

std::string FormatScaling(const BenchReport& report) {
  if (report.scaling.empty()) return "";
  const ScalingRow& first = report.scaling.front();
  std::string out = absl::StrFormat(
      "\n== scaling: %s N=%d K=%d, hot; efficiency = p50(1 thread) / "
      "(threads x p50) ==\n%-6s %-7s %5s %7s %10s %10s %10s %6s\n",
      first.layer, first.n, first.k, "mode", "backend", "M", "threads",
      "p50(us)", "min(us)", "p90(us)", "eff");
  for (const ScalingRow& r : report.scaling) {
    absl::StrAppendFormat(&out, "%-6s %-7s %5d %7d ", ImplTitle(r.impl),
                          r.backend, r.m, r.threads);
    if (r.status != RowStatus::kOk) {
      absl::StrAppendFormat(&out, "%s: %s\n", ToString(r.status), r.note);
      continue;
    }
    absl::StrAppendFormat(&out, "%10.1f %10.1f %10.1f %5.0f%%\n", r.time_us,
                          r.min_us, r.p90_us, r.efficiency * 100);
  }
  return out;
}

std::string FormatActOrder(const BenchReport& report) {
  if (report.act_order.empty()) return "";
  std::string out = absl::StrFormat(
      "\n== GPTQ act-order vs the same layer without, hot, interleaved; "
      "cost = act / plain - 1 (p50, min); copy = a second plain layer "
      "(noise floor) ==\n%-6s %-10s %6s %6s %5s %5s %10s %10s %10s %10s "
      "%8s %8s %8s %8s\n",
      "mode", "layer", "N", "K", "group", "M", "p50(us)", "min(us)", "act p50",
      "act min", "cost p50", "cost min", "copy p50", "copy min");
  // A ratio as the percentage it is above (+) or below (-) 1.
  const auto cost = [](double ratio) {
    return absl::StrFormat("%+7.1f%%", (ratio - 1.0) * 100);
  };
  for (const ActOrderRow& r : report.act_order) {
    absl::StrAppendFormat(&out, "%-6s %-10s %6d %6d %5d %5d ",
                          ImplTitle(r.impl), r.layer, r.n, r.k, r.group_size,
                          r.m);
    if (!r.ok()) {
      absl::StrAppendFormat(&out, "%s: %s\n", ToString(r.status), r.note);
      continue;
    }
    absl::StrAppendFormat(
        &out, "%10.1f %10.1f %10.1f %10.1f %s %s %s %s\n", r.plain_p50_us,
        r.plain_min_us, r.act_p50_us, r.act_min_us,
        cost(r.act_over_plain_p50()), cost(r.act_over_plain_min()),
        cost(r.copy_over_plain_p50()), cost(r.copy_over_plain_min()));
  }
  return out;
}

std::string FormatAccuracy(const BenchReport& report) {
  if (report.accuracy.empty()) return "";
  const AccuracyRow& first = report.accuracy.front();
  std::string out = absl::StrFormat(
      "\n== Accuracy: relative L2 error against float64 (same int4 weights, "
      "x as given), Gaussian x with %d outlier channels x%g; hot times, the "
      "three interleaved; vs tok = time / DA8W4 per-token's ==\n"
      "%-10s %6s %6s %5s %5s %-16s %9s %8s %10s %10s %8s %8s\n",
      first.outliers, first.outlier_scale, "layer", "N", "K", "group", "M",
      "mode", "rel err", "/ W4A16", "p50(us)", "min(us)", "tok p50", "tok min");
  for (const AccuracyRow& r : report.accuracy) {
    const std::string mode =
        r.act_quant.empty() ? ImplTitle(r.impl)
                            : absl::StrCat(ImplTitle(r.impl), " ", r.act_quant);
    absl::StrAppendFormat(&out, "%-10s %6d %6d %5d %5d %-16s ", r.layer, r.n,
                          r.k, r.group_size, r.m, mode);
    if (!r.ok()) {
      absl::StrAppendFormat(&out, "%s: %s\n", ToString(r.status), r.note);
      continue;
    }
    absl::StrAppendFormat(&out, "%9.2e %7.2fx %10.1f %10.1f %7.3fx %7.3fx\n",
                          r.rel_error, r.error_over_w4a16, r.p50_us, r.min_us,
                          r.over_per_token_p50, r.over_per_token_min);
  }
  return out;
}

// A MoE model's table: the step's bytes are its attention's and those of
// the distinct experts its routing touched; its MACs against the mode's
// compute peak, timed in the same rounds as the read.
std::string FormatMoeModel(const BenchReport& report) {
  const ModelRow& first = report.model_rows.front();
  const bool all = first.layers == first.model_layers;
  std::string out = absl::StrFormat(
      "\n== MoE model %s, %d of its %d decoder layers built, each %d "
      "attention linear(s) and a fused MoE layer; %s routing, drawn afresh "
      "every step and layer (the router's matmul not run) ==\n"
      "T = tokens per step. tok/s = T / p50 for the layers built; model "
      "tok/s = %s from the p50 (best: from the min).\n"
      "  exp/L = distinct experts a layer's tokens touch (mean of the timed "
      "steps); MB = the step's attention plus those experts' packed bytes.\n"
      "  read = a streaming read of a %s buffer, peak = the mode's compute "
      "peak loop (GMAC/s), both timed in the same rounds (p50 / best);\n"
      "  read%%, peak%%: the step's from its p50 over the p50's, min%%: from "
      "its min over the best. binds: the larger of bytes/read and "
      "MACs/peak.\n"
      "  part: step = the whole step; with --parts also its attention "
      "linears alone and its MoE layers alone.\n"
      "%-6s %-7s %-9s %4s %8s %8s %8s %7s %7s %7s %6s %8s %6s %6s %5s %5s "
      "%6s %6s %5s %5s %-7s %5s\n",
      report.model, first.layers, first.model_layers,
      first.layers > 0 ? first.calls / first.layers : 0, first.routing,
      all ? "the same (all layers built)"
          : absl::StrCat("extrapolated to all ", first.model_layers,
                         " layers by layer count"),
      FormatBytes(static_cast<double>(report.model_read_bytes)), "mode",
      "variant", "part", "T", "p50(ms)", "min(ms)", "p90(ms)", "tok/s", "model",
      "best", "exp/L", "MB", "read", "best", "read%", "min%", "peak", "best",
      "peak%", "min%", "binds", "tail");
  for (const ModelRow& r : report.model_rows) {
    absl::StrAppendFormat(&out, "%-6s %-7s %-9s %4d ", ImplTitle(r.impl),
                          r.variant, r.part.empty() ? "step" : r.part, r.m);
    if (!r.ok()) {
      absl::StrAppendFormat(&out, "%s: %s\n", ToString(r.status), r.note);
      continue;
    }
    absl::StrAppendFormat(
        &out,
        "%8.1f %8.1f %8.1f %7.1f %7.1f %7.1f %6.1f %8.1f %6.1f %6.1f %4.0f%% "
        "%4.0f%% %6.0f %6.0f %4.0f%% %4.0f%% %-7s %5.2f\n",
        r.time_ms, r.min_ms, r.p90_ms, r.tokens_per_s, r.model_tokens_per_s,
        r.model_tokens_per_s_best, r.experts_per_layer, r.weight_bytes / 1e6,
        r.read_gbps, r.read_gbps_best, r.read_pct, r.read_pct_min, r.peak_gmacs,
        r.peak_gmacs_best, r.peak_pct, r.peak_pct_min, r.bound, r.tail);
  }
  for (const ModelRow& r : report.model_rows) {
    if (r.ok() && !r.note.empty()) {
      absl::StrAppendFormat(&out, "note (%s %s T=%d): %s\n", ImplTitle(r.impl),
                            r.variant, r.m, r.note);
    }
  }
  return out;
}

std::string FormatModel(const BenchReport& report) {
  if (report.model_rows.empty()) return "";
  const ModelRow& first = report.model_rows.front();
  if (first.is_moe()) return FormatMoeModel(report);
  std::string out = absl::StrFormat(
      "\n== model %s, %d decoder layers, %d linear calls per step, a step "
      "through all in order ==\n"
      "read = a plain streaming read of a %s buffer timed in the same "
      "rounds (its p50 rate;\n  best = from its min); read%% = the step's "
      "weight GB/s (p50) over the read's p50,\n  min%% = the step's from "
      "its min over the read's best. plain: the linears alone;\n  fused: "
      "with gate_up silu_mul and the residual add in o_proj and down.\n"
      "  tail = p90 / min of the step; rd tail = that of the read (the "
      "machine's own noise).\n"
      "%-6s %-7s %-8s %-10s %-3s %5s %9s %9s %9s %9s %8s %7s %7s %6s %6s "
      "%5s %7s\n",
      report.model, first.layers, first.calls,
      FormatBytes(static_cast<double>(report.model_read_bytes)), "mode",
      "variant", "step", "setting", "2M", "M", "p50(ms)", "min(ms)", "p90(ms)",
      "tok/s", "W GB/s", "read", "best", "read%", "min%", "tail", "rd tail");
  for (const ModelRow& r : report.model_rows) {
    std::string setting = ModelSettingLabel(r.prefetch, r.tuning);
    if (setting.empty()) setting = "-";  // the defaults
    absl::StrAppendFormat(&out, "%-6s %-7s %-8s %-10s %-3s %5d ",
                          ImplTitle(r.impl), r.variant, r.step, setting,
                          r.huge_pages ? "on" : "off", r.m);
    if (!r.ok()) {
      absl::StrAppendFormat(&out, "%s: %s\n", ToString(r.status), r.note);
      continue;
    }
    absl::StrAppendFormat(
        &out,
        "%9.1f %9.1f %9.1f %9.1f %8.1f %7.1f %7.1f %5.0f%% %5.0f%% %5.2f "
        "%7.2f\n",
        r.time_ms, r.min_ms, r.p90_ms, r.tokens_per_s, r.weight_gbps,
        r.read_gbps, r.read_gbps_best, r.read_pct, r.read_pct_min, r.tail,
        r.read_tail);
  }
  return out;
}

std::string FormatReport(const BenchReport& report) {
  std::string out = FormatHeader(report);
  out += FormatModel(report);
  for (const std::string& impl : report.impls) {
    out += FormatTable(report, impl);
  }
  out += FormatScaling(report);
  out += FormatActOrder(report);
  out += FormatAccuracy(report);
  out += "\n";
  for (const std::string& impl : report.impls) {
    out += FormatSummary(report, impl);
  }
  return out;
}

}  // namespace w4jit::perf
