#include "perf/lib/report/report_files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace w4jit::perf {
namespace {

using nlohmann::json;

json CpuJson(const internal::CpuProfile& c) {
  const internal::CpuFeatures& f = c.features;
  return {{"name", c.name},
          {"vendor", c.vendor == internal::Vendor::kAmd     ? "amd"
                     : c.vendor == internal::Vendor::kIntel ? "intel"
                                                            : "unknown"},
          {"family", c.family},
          {"model", c.model},
          {"stepping", c.stepping},
          {"zen_generation", c.zen_generation},
          {"isa", internal::ToString(c.isa)},
          {"isa_cap", internal::ToString(c.isa_cap)},
          {"native_vector_bits", c.native_vector_bits},
          {"l1d_bytes", c.l1d_bytes},
          {"l2_bytes", c.l2_bytes},
          {"l3_bytes", c.l3_bytes},
          {"cores", c.cores},
          {"features",
           {{"avx2", f.avx2},
            {"fma", f.fma},
            {"avx512f", f.avx512f},
            {"avx512bw", f.avx512bw},
            {"avx512vl", f.avx512vl},
            {"avx512dq", f.avx512dq},
            {"avx512vnni", f.avx512vnni},
            {"avx512bf16", f.avx512bf16},
            {"avx_vnni", f.avx_vnni},
            {"amx_tile", f.amx_tile},
            {"amx_bf16", f.amx_bf16},
            {"amx_int8", f.amx_int8}}}};
}

// act_order.csv's columns and the keys of bench.json's "act_order"
// objects, in order: one list, so that the two cannot drift apart.
// One column of a section's CSV file, which is also the key of the same
// value in the section's bench.json objects: one list per section keeps the
// two files from drifting apart.
template <class Row>
struct Column {
  const char* name;
  json (*value)(const Row&);
};

// The columns that name a row's layer and M, first in every section that
// has them.
template <class Row>
std::vector<Column<Row>> WithLayerColumns(std::vector<Column<Row>> rest) {
  using R = const Row&;
  std::vector<Column<Row>> columns = {
      {"impl", [](R r) -> json { return r.impl; }},
      {"layer", [](R r) -> json { return r.layer; }},
      {"n", [](R r) -> json { return r.n; }},
      {"k", [](R r) -> json { return r.k; }},
      {"group_size", [](R r) -> json { return r.group_size; }},
      {"m", [](R r) -> json { return r.m; }}};
  columns.insert(columns.end(), rest.begin(), rest.end());
  return columns;
}

const std::vector<Column<BenchRow>>& RowColumns() {
  using R = const BenchRow&;
  static const std::vector<Column<BenchRow>>* columns =
      new std::vector<Column<BenchRow>>(WithLayerColumns<BenchRow>(
          {{"cache", [](R r) -> json { return r.cold ? "cold" : "hot"; }},
           {"status", [](R r) -> json { return ToString(r.status); }},
           {"time_us", [](R r) -> json { return r.time_us; }},
           {"min_us", [](R r) -> json { return r.min_us; }},
           {"p90_us", [](R r) -> json { return r.p90_us; }},
           {"samples", [](R r) -> json { return r.samples; }},
           {"gflops", [](R r) -> json { return r.gflops; }},
           {"weight_bytes", [](R r) -> json { return r.weight_bytes; }},
           {"weight_gbps", [](R r) -> json { return r.weight_gbps; }},
           {"footprint_bytes", [](R r) -> json { return r.footprint_bytes; }},
           {"cold_copies", [](R r) -> json { return r.cold_copies; }},
           {"roofline_pct", [](R r) -> json { return r.roofline_pct; }},
           {"roofline_pct_min", [](R r) -> json { return r.roofline_pct_min; }},
           {"roofline_basis", [](R r) -> json { return r.roofline_basis; }},
           {"bound", [](R r) -> json { return r.bound; }},
           {"bound_us", [](R r) -> json { return r.bound_us; }},
           {"memory_bound_us", [](R r) -> json { return r.memory_bound_us; }},
           {"memory_basis", [](R r) -> json { return r.memory_basis; }},
           {"compute_bound_us", [](R r) -> json { return r.compute_bound_us; }},
           {"compute_basis", [](R r) -> json { return r.compute_basis; }},
           {"compute_peak_gmacs",
            [](R r) -> json { return r.compute_peak_gmacs; }},
           {"ceiling_rate", [](R r) -> json { return r.ceiling_rate; }},
           {"ceiling_basis", [](R r) -> json { return r.ceiling_basis; }},
           {"interleaved_pct", [](R r) -> json { return r.interleaved_pct; }},
           {"speedup_vs_onednn_bf16",
            [](R r) -> json { return r.speedup_vs_bf16; }},
           {"speedup_vs_onednn_u8s8",
            [](R r) -> json { return r.speedup_vs_u8s8; }},
           {"kernel", [](R r) -> json { return r.kernel; }},
           {"compute_op", [](R r) -> json { return r.compute_op; }},
           {"note", [](R r) -> json { return r.note; }}}));
  return *columns;
}

const std::vector<Column<ScalingRow>>& ScalingColumns() {
  using R = const ScalingRow&;
  static const std::vector<Column<ScalingRow>>* columns =
      new std::vector<Column<ScalingRow>>{
          {"impl", [](R r) -> json { return r.impl; }},
          {"backend", [](R r) -> json { return r.backend; }},
          {"layer", [](R r) -> json { return r.layer; }},
          {"n", [](R r) -> json { return r.n; }},
          {"k", [](R r) -> json { return r.k; }},
          {"m", [](R r) -> json { return r.m; }},
          {"threads", [](R r) -> json { return r.threads; }},
          {"status", [](R r) -> json { return ToString(r.status); }},
          {"time_us", [](R r) -> json { return r.time_us; }},
          {"min_us", [](R r) -> json { return r.min_us; }},
          {"p90_us", [](R r) -> json { return r.p90_us; }},
          {"samples", [](R r) -> json { return r.samples; }},
          {"efficiency", [](R r) -> json { return r.efficiency; }},
          {"note", [](R r) -> json { return r.note; }}};
  return *columns;
}

const std::vector<Column<ActOrderRow>>& ActOrderColumns() {
  using R = const ActOrderRow&;
  static const std::vector<Column<ActOrderRow>>* columns =
      new std::vector<Column<ActOrderRow>>(WithLayerColumns<ActOrderRow>(
          {{"status", [](R r) -> json { return ToString(r.status); }},
           {"samples", [](R r) -> json { return r.samples; }},
           {"plain_p50_us", [](R r) -> json { return r.plain_p50_us; }},
           {"plain_min_us", [](R r) -> json { return r.plain_min_us; }},
           {"act_p50_us", [](R r) -> json { return r.act_p50_us; }},
           {"act_min_us", [](R r) -> json { return r.act_min_us; }},
           {"copy_p50_us", [](R r) -> json { return r.copy_p50_us; }},
           {"copy_min_us", [](R r) -> json { return r.copy_min_us; }},
           {"act_over_plain_p50",
            [](R r) -> json { return r.act_over_plain_p50(); }},
           {"act_over_plain_min",
            [](R r) -> json { return r.act_over_plain_min(); }},
           {"copy_over_plain_p50",
            [](R r) -> json { return r.copy_over_plain_p50(); }},
           {"copy_over_plain_min",
            [](R r) -> json { return r.copy_over_plain_min(); }},
           {"note", [](R r) -> json { return r.note; }}}));
  return *columns;
}

const std::vector<Column<AccuracyRow>>& AccuracyColumns() {
  using R = const AccuracyRow&;
  static const std::vector<Column<AccuracyRow>>* columns =
      new std::vector<Column<AccuracyRow>>(WithLayerColumns<AccuracyRow>(
          {{"act_quant", [](R r) -> json { return r.act_quant; }},
           {"status", [](R r) -> json { return ToString(r.status); }},
           {"outliers", [](R r) -> json { return r.outliers; }},
           {"outlier_scale", [](R r) -> json { return r.outlier_scale; }},
           {"rel_error", [](R r) -> json { return r.rel_error; }},
           {"error_over_w4a16", [](R r) -> json { return r.error_over_w4a16; }},
           {"samples", [](R r) -> json { return r.samples; }},
           {"p50_us", [](R r) -> json { return r.p50_us; }},
           {"min_us", [](R r) -> json { return r.min_us; }},
           {"over_per_token_p50",
            [](R r) -> json { return r.over_per_token_p50; }},
           {"over_per_token_min",
            [](R r) -> json { return r.over_per_token_min; }},
           {"note", [](R r) -> json { return r.note; }}}));
  return *columns;
}

const std::vector<Column<ModelRow>>& ModelColumns() {
  using R = const ModelRow&;
  static const std::vector<Column<ModelRow>>* columns =
      new std::vector<Column<ModelRow>>{
          {"impl", [](R r) -> json { return r.impl; }},
          {"model", [](R r) -> json { return r.model; }},
          {"layers", [](R r) -> json { return r.layers; }},
          {"variant", [](R r) -> json { return r.variant; }},
          {"step", [](R r) -> json { return r.step; }},
          {"prefetch", [](R r) -> json { return r.prefetch; }},
          {"tuning", [](R r) -> json { return r.tuning; }},
          {"huge_pages", [](R r) -> json { return r.huge_pages; }},
          {"m", [](R r) -> json { return r.m; }},
          {"calls", [](R r) -> json { return r.calls; }},
          {"status", [](R r) -> json { return ToString(r.status); }},
          {"samples", [](R r) -> json { return r.samples; }},
          {"time_ms", [](R r) -> json { return r.time_ms; }},
          {"min_ms", [](R r) -> json { return r.min_ms; }},
          {"p90_ms", [](R r) -> json { return r.p90_ms; }},
          {"tokens_per_s", [](R r) -> json { return r.tokens_per_s; }},
          {"weight_bytes", [](R r) -> json { return r.weight_bytes; }},
          {"weight_gbps", [](R r) -> json { return r.weight_gbps; }},
          {"weight_gbps_max", [](R r) -> json { return r.weight_gbps_max; }},
          {"read_gbps", [](R r) -> json { return r.read_gbps; }},
          {"read_gbps_best", [](R r) -> json { return r.read_gbps_best; }},
          {"read_pct", [](R r) -> json { return r.read_pct; }},
          {"read_pct_min", [](R r) -> json { return r.read_pct_min; }},
          {"tail", [](R r) -> json { return r.tail; }},
          {"read_tail", [](R r) -> json { return r.read_tail; }},
          {"model_layers", [](R r) -> json { return r.model_layers; }},
          {"model_tokens_per_s",
           [](R r) -> json { return r.model_tokens_per_s; }},
          {"model_tokens_per_s_best",
           [](R r) -> json { return r.model_tokens_per_s_best; }},
          {"routing", [](R r) -> json { return r.routing; }},
          {"part", [](R r) -> json { return r.part; }},
          {"moe_calls", [](R r) -> json { return r.moe_calls; }},
          {"attention_bytes", [](R r) -> json { return r.attention_bytes; }},
          {"expert_bytes", [](R r) -> json { return r.expert_bytes; }},
          {"experts_per_layer",
           [](R r) -> json { return r.experts_per_layer; }},
          {"macs", [](R r) -> json { return r.macs; }},
          {"peak_gmacs", [](R r) -> json { return r.peak_gmacs; }},
          {"peak_gmacs_best", [](R r) -> json { return r.peak_gmacs_best; }},
          {"peak_pct", [](R r) -> json { return r.peak_pct; }},
          {"peak_pct_min", [](R r) -> json { return r.peak_pct_min; }},
          {"bound", [](R r) -> json { return r.bound; }},
          {"note", [](R r) -> json { return r.note; }}};
  return *columns;
}

// moe.csv's columns and the keys of bench.json's "moe" objects.
const std::vector<Column<MoeBenchRow>>& MoeColumns() {
  using R = const MoeBenchRow&;
  static const std::vector<Column<MoeBenchRow>>* columns =
      new std::vector<Column<MoeBenchRow>>{
          {"model", [](R r) -> json { return r.preset; }},
          {"mode", [](R r) -> json { return ToString(r.mode); }},
          {"routing",
           [](R r) -> json { return r.skewed ? "skewed" : "uniform"; }},
          {"tokens", [](R r) -> json { return r.tokens; }},
          {"threads", [](R r) -> json { return r.threads; }},
          {"min_us", [](R r) -> json { return r.min_us; }},
          {"median_us", [](R r) -> json { return r.median_us; }},
          {"touched_experts", [](R r) -> json { return r.touched_experts; }},
          {"touched_bytes", [](R r) -> json { return r.touched_bytes; }},
          {"read_bytes_per_s", [](R r) -> json { return r.read_bytes_per_s; }},
          {"roof_pct", [](R r) -> json { return r.roof_pct(); }},
          {"macs", [](R r) -> json { return r.macs; }},
          {"peak_macs_per_s", [](R r) -> json { return r.peak_macs_per_s; }},
          {"peak_pct", [](R r) -> json { return r.peak_pct(); }},
          {"bound", [](R r) -> json { return r.bound(); }},
          {"loop_min_us", [](R r) -> json { return r.loop_min_us; }},
          {"loop_median_us", [](R r) -> json { return r.loop_median_us; }}};
  return *columns;
}

template <class Row>
json SectionJson(const std::vector<Column<Row>>& columns,
                 const std::vector<Row>& rows) {
  json out = json::array();
  for (const Row& r : rows) {
    json row = json::object();
    for (const Column<Row>& c : columns) row[c.name] = c.value(r);
    out.push_back(std::move(row));
  }
  return out;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  f.close();
  if (!f) {
    return absl::InternalError(
        absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& RowKeys() {
  static const std::vector<std::string>* columns = [] {
    auto* names = new std::vector<std::string>;
    for (const Column<BenchRow>& c : RowColumns()) names->push_back(c.name);
    return names;
  }();
  return *columns;
}

// Top-level keys: schema, w4jit_version, onednn_version, date_utc, preset,
// threads, cpu{...}, options{ms, impls, reps, min_time_s}, peaks[...],
// bandwidths[...], layers[...], wait_policy, rows[...], scaling[...]
// (--scaling), act_order[...] (--act-order, act_order.csv's columns as
// keys), accuracy[...] (--accuracy, accuracy.csv's columns),
// model{name, read_bytes, layers[...], rows[...]} (--model, model.csv's
// columns as the rows' keys), moe[...] (--moe, moe.csv's columns),
// any_failed. The sections that were not run are empty arrays (model:
// null).
std::string ToJson(const BenchReport& report) {
  json peaks = json::array();
  for (const ComputePeak& p : report.roofline.peaks) {
    peaks.push_back({{"key", p.key},
                     {"description", p.description},
                     {"available", p.available},
                     {"note", p.note},
                     {"gmacs", p.macs_per_s * 1e-9},
                     {"threads", p.threads},
                     {"chains", p.chains}});
  }
  json bandwidths = json::array();
  for (const ReadBandwidth& b : report.roofline.bandwidths) {
    bandwidths.push_back({{"label", b.label},
                          {"bytes", b.bytes},
                          {"gbps", b.bytes_per_s * 1e-9},
                          {"threads", b.threads},
                          {"vector_bytes", b.vector_bytes}});
  }
  const auto layer_infos = [](const std::vector<LayerInfo>& infos) {
    json out = json::array();
    for (const LayerInfo& l : infos) {
      out.push_back({{"impl", l.impl},
                     {"layer", l.layer},
                     {"n", l.n},
                     {"k", l.k},
                     {"group_size", l.group_size},
                     {"packed_bytes", l.packed_bytes},
                     {"create_ms", l.create_ms},
                     {"jit_generations", l.jit_generations},
                     {"jit_ms", l.jit_ms},
                     {"kernel", l.kernel}});
    }
    return out;
  };
  const json layers = layer_infos(report.layers);
  json model = nullptr;
  if (!report.model.empty()) {
    model = {{"name", report.model},
             {"read_bytes", report.model_read_bytes},
             {"layers", layer_infos(report.model_layers)},
             {"rows", SectionJson(ModelColumns(), report.model_rows)}};
  }
  const json rows = SectionJson(RowColumns(), report.rows);
  const json scaling = SectionJson(ScalingColumns(), report.scaling);
  const json act_order = SectionJson(ActOrderColumns(), report.act_order);
  const json accuracy = SectionJson(AccuracyColumns(), report.accuracy);
  const json moe = SectionJson(MoeColumns(), report.moe);
  const json doc = {{"schema", "w4jit-bench/1"},
                    {"w4jit_version", report.w4jit_version},
                    {"onednn_version", report.onednn_version},
                    {"date_utc", report.date_utc},
                    {"preset", report.preset},
                    {"threads", report.threads},
                    {"cpu", CpuJson(report.cpu)},
                    {"options",
                     {{"ms", report.ms},
                      {"impls", report.impls},
                      {"reps", report.reps},
                      {"min_time_s", report.min_time_s}}},
                    {"peaks", peaks},
                    {"bandwidths", bandwidths},
                    {"layers", layers},
                    {"wait_policy", report.wait_policy},
                    {"rows", rows},
                    {"scaling", scaling},
                    {"act_order", act_order},
                    {"accuracy", accuracy},
                    {"model", model},
                    {"moe", moe},
                    {"any_failed", report.any_failed()}};
  return doc.dump(2) + "\n";
}

absl::StatusOr<std::vector<std::string>> WriteBenchFiles(
    const BenchReport& report, const std::string& text,
    const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  const std::pair<std::string, std::string> files[] = {
      {"bench.json", ToJson(report)}, {"bench.txt", text}};
  std::vector<std::string> written;
  for (const auto& [name, content] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    if (absl::Status s = WriteFile(path, content); !s.ok()) return s;
    written.push_back(path);
  }
  return written;
}

}  // namespace w4jit::perf
