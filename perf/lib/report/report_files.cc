#include "perf/lib/report/report_files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dispatch/cpu_profile.h"
#include "nlohmann/json.hpp"
#include "perf/lib/report/report_json.h"

namespace w4jit {
namespace internal {

// bench.json's cpu{...}: the fields listed, in words where they are enums
// (the signature, the AMX permission, f16c and fp256 are not written).
NLOHMANN_JSON_SERIALIZE_ENUM(Vendor, {{Vendor::kUnknown, "unknown"},
                                      {Vendor::kIntel, "intel"},
                                      {Vendor::kAmd, "amd"}})
inline void to_json(nlohmann::json& j, IsaTier t) { j = ToString(t); }
// Only because the macro below defines both directions: bench.json is not
// read back in C++. An unknown tier is an error, not a silent default.
inline void from_json(const nlohmann::json& j, IsaTier& t) {
  if (!ParseIsaTier(j.get<std::string>(), &t)) {
    throw std::invalid_argument("bench.json: unknown ISA tier " + j.dump());
  }
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CpuFeatures, avx2, fma, avx512f, avx512bw,
                                   avx512vl, avx512dq, avx512vnni, avx512bf16,
                                   avx_vnni, amx_tile, amx_bf16, amx_int8)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CpuProfile, name, vendor, family, model,
                                   stepping, zen_generation, isa, isa_cap,
                                   native_vector_bits, l1d_bytes, l2_bytes,
                                   l3_bytes, cores, features)

}  // namespace internal

namespace perf {

using nlohmann::json;

// The ceilings in GMAC/s and GB/s, not the structs' per-second units.
inline void to_json(json& j, const ComputePeak& p) {
  j = {{"key", p.key},
       {"description", p.description},
       {"available", p.available},
       {"note", p.note},
       {"gmacs", p.macs_per_s * 1e-9},
       {"threads", p.threads},
       {"chains", p.chains}};
}
inline void to_json(json& j, const ReadBandwidth& b) {
  j = {{"label", b.label},
       {"bytes", b.bytes},
       {"gbps", b.bytes_per_s * 1e-9},
       {"threads", b.threads},
       {"vector_bytes", b.vector_bytes}};
}

// Each row is its fields under their own names (bench.json's keys, which
// w4jit.report reads); a field added to a row is written once it is listed
// here.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(
    BenchRow, impl, layer, n, k, group_size, m, cold, status, note, kernel,
    compute_op, samples, time_us, min_us, p90_us, weight_bytes, footprint_bytes,
    cold_copies, gflops, weight_gbps, memory_bound_us, memory_basis,
    compute_bound_us, compute_basis, compute_peak_gmacs, bound, bound_us,
    roofline_pct, roofline_pct_min, roofline_basis, ceiling_rate, ceiling_basis,
    interleaved_pct)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(LayerInfo, impl, layer, n, k, group_size,
                                   packed_bytes, create_ms, jit_generations,
                                   jit_ms, kernel)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ScalingRow, impl, backend, layer, n, k, m,
                                   threads, status, note, samples, time_us,
                                   min_us, p90_us)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ActOrderRow, impl, layer, n, k, group_size,
                                   m, status, note, samples, plain_p50_us,
                                   plain_min_us, act_p50_us, act_min_us,
                                   copy_p50_us, copy_min_us)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AccuracyRow, impl, layer, n, k, group_size,
                                   m, act_quant, status, note, outliers,
                                   outlier_scale, rel_error, samples, p50_us,
                                   min_us)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ModelRow, impl, model, layers, variant, step,
                                   prefetch, tuning, huge_pages, m, calls,
                                   status, note, samples, time_ms, min_ms,
                                   p90_ms, weight_bytes, read_gbps,
                                   read_gbps_best, read_tail, model_layers,
                                   routing, part, moe_calls, attention_bytes,
                                   expert_bytes, experts_per_layer, macs,
                                   peak_gmacs, peak_gmacs_best)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MoeBenchRow, mode, tokens, threads, min_us,
                                   median_us, loop_min_us, loop_median_us,
                                   touched_experts, touched_bytes,
                                   read_bytes_per_s, macs, peak_macs_per_s)

namespace {

// A layers row's cache state as the word the report reads.
json RowJson(const BenchRow& r) {
  json j = r;
  j.erase("cold");
  j["cache"] = r.cold ? "cold" : "hot";
  return j;
}

// A MoE row names its preset and routing in words.
json MoeJson(const MoeBenchRow& r) {
  json j = r;
  j["model"] = r.preset;
  j["routing"] = r.skewed ? "skewed" : "uniform";
  return j;
}

// The rows the macros above write, each then rewritten by `fn`.
template <class Row, class Fn>
json SectionJson(const std::vector<Row>& rows, Fn fn) {
  json out = json::array();
  for (const Row& r : rows) out.push_back(fn(r));
  return out;
}

}  // namespace

std::string ToJson(const BenchReport& report) {
  json model = nullptr;
  if (!report.model.empty()) {
    model = {{"name", report.model},
             {"read_bytes", report.model_read_bytes},
             {"layers", report.model_layers},
             {"rows", report.model_rows}};
  }
  const json doc = {{"schema", "w4jit-bench/2"},
                    {"w4jit_version", report.w4jit_version},
                    {"onednn_version", report.onednn_version},
                    {"date_utc", report.date_utc},
                    {"preset", report.preset},
                    {"threads", report.threads},
                    {"cpu", report.cpu},
                    {"options",
                     {{"ms", report.ms},
                      {"impls", report.impls},
                      {"reps", report.reps},
                      {"min_time_s", report.min_time_s}}},
                    {"peaks", report.roofline.peaks},
                    {"bandwidths", report.roofline.bandwidths},
                    {"layers", report.layers},
                    {"wait_policy", report.wait_policy},
                    {"rows", SectionJson(report.rows, RowJson)},
                    {"scaling", report.scaling},
                    {"act_order", report.act_order},
                    {"accuracy", report.accuracy},
                    {"model", model},
                    {"moe", SectionJson(report.moe, MoeJson)},
                    {"any_failed", report.any_failed()}};
  return doc.dump(2) + "\n";
}

absl::StatusOr<std::vector<std::string>> WriteFilesIn(
    const std::string& dir,
    const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  std::vector<std::string> written;
  for (const auto& [name, text] : files) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) {
      return absl::InternalError(
          absl::StrCat("cannot write ", path, ": ", std::strerror(errno)));
    }
    written.push_back(path);
  }
  return written;
}

absl::StatusOr<std::vector<std::string>> WriteBenchFiles(
    const BenchReport& report, const std::string& text,
    const std::string& dir) {
  return WriteFilesIn(dir,
                      {{"bench.json", ToJson(report)}, {"bench.txt", text}});
}

}  // namespace perf
}  // namespace w4jit
