// The bench's outputs for people and machines: derived figures, the text
// table, CSV and JSON (parsed back, required keys present) and the files.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/report/row_metrics.h"
#include "perf/lib/sections/moe_bench.h"
#include "tests/bench_sample_report.h"

namespace w4jit::perf {
namespace {

const BenchRow& Find(const BenchReport& r, const std::string& impl, int64_t m,
                     bool cold) {
  for (const BenchRow& row : r.rows) {
    if (row.impl == impl && row.m == m && row.cold == cold) return row;
  }
  static const BenchRow none;
  ADD_FAILURE() << "no row " << impl << " " << m;
  return none;
}

TEST(BenchReport, DerivedFiguresFollowTheDefinitions) {
  const BenchReport r = SampleReport();
  const BenchRow& hot = Find(r, kImplW4a16, 1, false);
  EXPECT_NEAR(hot.gflops, 2.0 * 6144 * 4096 / 900e-6 * 1e-9, 1e-9);
  EXPECT_NEAR(hot.weight_gbps, hot.weight_bytes / 900e-6 * 1e-9, 1e-9);
  // M = 1: the memory bound binds, the read rate at the footprint (13 MB:
  // in the L3, the L3-sized measurement).
  EXPECT_EQ(hot.bound, kBoundMemory);
  EXPECT_EQ(hot.roofline_basis, "L3 read 16.8 MB");
  EXPECT_NEAR(hot.roofline_pct, 100 * hot.weight_gbps / 30, 1e-9);
  // Cold: the rotation's footprint (65 MB) is nearest to DRAM-sized.
  EXPECT_EQ(Find(r, kImplW4a16, 1, true).roofline_basis, "DRAM read 134.2 MB");
  // Large M: MAC rate over the f32 FMA peak for an AVX2 W4A16 kernel.
  const BenchRow& large = Find(r, kImplW4a16, 64, false);
  EXPECT_EQ(large.bound, kBoundCompute);
  EXPECT_EQ(large.roofline_basis, "peak f32_fma_ymm");
  EXPECT_NEAR(large.roofline_pct, 100 * 64.0 * 6144 * 4096 / 30000e-6 / 100e9,
              1e-9);
  // The same ceiling from the min (the sample report's min is 0.9 x p50).
  EXPECT_NEAR(large.roofline_pct_min,
              100 * 64.0 * 6144 * 4096 / (0.9 * 30000e-6) / 100e9, 1e-9);
  EXPECT_NEAR(hot.roofline_pct_min, hot.roofline_pct / 0.9, 1e-9);
  EXPECT_TRUE(r.any_failed());
}

// The roofline time of a row is the larger of its memory bound (weight
// bytes at the read rate of its footprint) and its compute bound (MACs at
// its instruction's peak), whatever M: in the sample W4A16 at M = 1 is
// memory-bound and at M = 8 compute-bound (as W4A16 at M = 8 is on Zen 4,
// at the bf16 peak, where the read rate alone said 8%).
TEST(BenchReport, TheLargerOfTheTwoBoundsBinds) {
  const BenchReport r = SampleReport();
  const double w4 = 6144.0 * 4096 / 2 + 6144.0 * 32 * 4;
  const double macs = 6144.0 * 4096;  // at M = 1
  const BenchRow& memory = Find(r, kImplW4a16, 1, false);
  EXPECT_EQ(memory.bound, kBoundMemory);
  EXPECT_NEAR(memory.memory_bound_us, w4 / 30e9 * 1e6, 1e-9);
  EXPECT_EQ(memory.memory_basis, "L3 read 16.8 MB");
  EXPECT_NEAR(memory.compute_bound_us, macs / 100e9 * 1e6, 1e-9);
  EXPECT_EQ(memory.compute_basis, "peak f32_fma_ymm");
  EXPECT_EQ(memory.bound_us, memory.memory_bound_us);
  EXPECT_EQ(memory.roofline_basis, memory.memory_basis);
  EXPECT_NEAR(memory.roofline_pct, 100 * memory.bound_us / 900, 1e-9);

  const BenchRow& compute = Find(r, kImplW4a16, 8, false);
  EXPECT_EQ(compute.bound, kBoundCompute);
  EXPECT_NEAR(compute.compute_bound_us, 8 * macs / 100e9 * 1e6, 1e-9);
  EXPECT_NEAR(compute.memory_bound_us, memory.memory_bound_us, 1e-9);
  EXPECT_EQ(compute.memory_basis, "L3 read 16.8 MB");
  EXPECT_EQ(compute.bound_us, compute.compute_bound_us);
  EXPECT_EQ(compute.roofline_basis, "peak f32_fma_ymm");
  // 2013 us of 2500 us: 81% of the roofline, where the read rate alone
  // would say 18%.
  EXPECT_NEAR(compute.roofline_pct, 100 * 8 * macs / 100e9 * 1e6 / 2500, 1e-9);
  EXPECT_NEAR(compute.roofline_pct_min, compute.roofline_pct / 0.9, 1e-9);
  EXPECT_TRUE(compute.note.empty()) << compute.note;
  // Rows that did not run have no bound.
  EXPECT_EQ(Find(r, kImplDa8w4, 64, false).bound, "");

  // The terminal table names each row's binding bound.
  const std::string text = Squeezed(FormatReport(r));
  for (const char* needle :
       {"binding bound", "50% L3 read 16.8 MB", "81% peak f32_fma_ymm"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }

  // bench.json: the bounds beside the old keys.
  const nlohmann::json j = nlohmann::json::parse(ToJson(r));
  ASSERT_EQ(j["rows"].size(), r.rows.size());
  for (const char* name :
       {"roofline_pct", "roofline_pct_min", "roofline_basis", "bound",
        "bound_us", "memory_bound_us", "memory_basis", "compute_bound_us",
        "compute_basis", "ceiling_basis", "interleaved_pct"}) {
    EXPECT_TRUE(j["rows"][0].contains(name)) << name;
  }
  for (size_t i = 0; i < r.rows.size(); ++i) {
    EXPECT_EQ(j["rows"][i]["bound"], r.rows[i].bound);
    EXPECT_EQ(j["rows"][i]["roofline_basis"], r.rows[i].roofline_basis);
  }
  int seen = 0;
  for (const auto& row : j["rows"]) {
    if (row["impl"] != kImplW4a16 || row["cache"] != "hot") continue;
    if (row["m"] == 1) {
      EXPECT_EQ(row["bound"], kBoundMemory);
      EXPECT_EQ(row["roofline_basis"], "L3 read 16.8 MB");
      ++seen;
    } else if (row["m"] == 8) {
      EXPECT_EQ(row["bound"], kBoundCompute);
      EXPECT_EQ(row["roofline_basis"], "peak f32_fma_ymm");
      EXPECT_EQ(row["memory_basis"], "L3 read 16.8 MB");
      EXPECT_NEAR(row["bound_us"].get<double>(), compute.bound_us, 1e-9);
      EXPECT_NEAR(row["roofline_pct"].get<double>(), compute.roofline_pct,
                  1e-9);
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2);
}

// A ceiling timed beside a row raises the bound it measures and only that.
TEST(BenchReport, AnInterleavedCeilingRaisesItsOwnBound) {
  const BenchReport r = SampleReport();
  BenchRow row = SampleRow(kImplW4a16, 8, false, 2500, 16 << 20);
  const RowBounds plain = BoundsFor(row, r.roofline);
  row.ceiling_basis = "peak f32_fma_ymm";
  row.ceiling_rate = 200e9;
  RowBounds b = BoundsFor(row, r.roofline);
  EXPECT_NEAR(b.compute_us, plain.compute_us / 2, 1e-9);
  EXPECT_EQ(b.memory_us, plain.memory_us);
  row.ceiling_basis = "peak int8_avx2";  // not this kernel's instruction
  b = BoundsFor(row, r.roofline);
  EXPECT_EQ(b.compute_us, plain.compute_us);
  row.ceiling_basis = "bw 16.8 MB read";
  row.ceiling_rate = 60e9;  // the L3-sized one measured 30 GB/s
  b = BoundsFor(row, r.roofline);
  EXPECT_NEAR(b.memory_us, plain.memory_us / 2, 1e-9);
  EXPECT_EQ(b.compute_us, plain.compute_us);
  row.ceiling_rate = 10e9;  // a lower one: the run's best stands
  EXPECT_EQ(BoundsFor(row, r.roofline).memory_us, plain.memory_us);
  // Nothing measured: no bound.
  EXPECT_EQ(BoundsFor(row, Roofline()).bound_us(), 0.0);
}

TEST(BenchReport, FootprintsAreNamedByTheLevelTheyAreReadFrom) {
  Roofline roof;
  roof.bandwidths = {{"L2-sized", 1 << 20, 90e9, 2, 32},
                     {"L3-sized", 16 << 20, 30e9, 2, 32},
                     {"DRAM-sized", 128 << 20, 15e9, 2, 32},
                     {"qkv weights", 13 << 20, 31e9, 2, 32}};
  // Without the cache sizes: the nearest level-sized measurement.
  EXPECT_EQ(roof.LevelFor(int64_t{3} << 19), "L2");
  EXPECT_EQ(roof.LevelFor(int64_t{13} << 20), "L3");
  EXPECT_EQ(roof.LevelFor(int64_t{500} << 20), "DRAM");
  roof.l2_bytes = int64_t{2} << 20;
  roof.l3_bytes = int64_t{32} << 20;
  EXPECT_EQ(roof.LevelFor(int64_t{2} << 20), "L2");
  EXPECT_EQ(roof.LevelFor(int64_t{3} << 20), "L3");
  EXPECT_EQ(roof.LevelFor(int64_t{32} << 20), "L3");
  EXPECT_EQ(roof.LevelFor(int64_t{33} << 20), "DRAM");
  EXPECT_EQ(Roofline().LevelFor(1000), "");
}

TEST(BenchReport, ComputeRowsAreJudgedAgainstTheBestCeilingOfTheRun) {
  BenchReport r = SampleReport();
  const double macs = 64.0 * 6144 * 4096;
  const double rate = macs / 40000e-6;  // 40 G: below the 100 G peak
  // A disturbed interleaved ceiling below the row's own rate: the row is
  // judged against the best one (the roofline's 100 G), the interleaved
  // figure is a column above 100%.
  BenchRow row = SampleRow(kImplW4a16, 64, false, 40000, 1000);
  row.ceiling_rate = rate / 1.25;
  row.ceiling_basis = "peak f32_fma_ymm";
  FoldInterleavedCeilings({row}, &r.roofline);
  EXPECT_EQ(r.roofline.Peak("f32_fma_ymm")->macs_per_s, 100e9);
  FillRowMetrics(r.roofline, &row);
  EXPECT_EQ(row.roofline_basis, "peak f32_fma_ymm");
  EXPECT_NEAR(row.roofline_pct, 100 * rate / 100e9, 1e-9);
  EXPECT_NEAR(row.interleaved_pct, 125.0, 1e-9);
  EXPECT_LE(row.roofline_pct, 100.0);
  // An interleaved timing above the roofline's best raises the ceiling.
  row.ceiling_rate = 160e9;
  FoldInterleavedCeilings({row}, &r.roofline);
  EXPECT_EQ(r.roofline.Peak("f32_fma_ymm")->macs_per_s, 160e9);
  FillRowMetrics(r.roofline, &row);
  EXPECT_NEAR(row.roofline_pct, 100 * rate / 160e9, 1e-9);
  EXPECT_NEAR(row.roofline_pct, row.interleaved_pct, 1e-9);
  // Bandwidth rows: the measurement at the row's footprint is raised.
  BenchRow small = SampleRow(kImplW4a16, 1, false, 900, 16 << 20);
  small.ceiling_rate = 45e9;
  small.ceiling_basis = "bw 16.8 MB read";
  FoldInterleavedCeilings({small}, &r.roofline);
  FillRowMetrics(r.roofline, &small);
  EXPECT_NEAR(small.roofline_pct, 100 * small.weight_gbps / 45, 1e-9);
  // A row above even the best ceiling says so.
  BenchRow fast = SampleRow(kImplW4a16, 64, false, 5000, 1000);
  FillRowMetrics(r.roofline, &fast);
  EXPECT_GT(fast.roofline_pct, 100.0);
  EXPECT_NE(fast.note.find("disturbed"), std::string::npos) << fast.note;
}

TEST(BenchReport, ComputeOpFollowsTheLayerAndPicksThePeak) {
  Roofline roof;
  for (const char* key : {"int8_avx2", "int8_avx2_i16", "int8_vnni_zmm",
                          "f32_fma_ymm", "f32_fma_zmm", "bf16_dot_zmm"}) {
    ComputePeak p;
    p.key = key;
    p.available = true;
    p.macs_per_s = 1;
    roof.peaks.push_back(p);
  }
  EXPECT_EQ(ComputeOpKey({ComputeOp::kInt8Dot, 512}), "int8_vnni_zmm");
  // AVX2 DA8W4 accumulates in int16: judged against that loop's peak.
  EXPECT_EQ(ComputeOpKey({ComputeOp::kInt8Dot, 256}), "int8_avx2_i16");
  EXPECT_EQ(ComputeOpKey({ComputeOp::kBf16Dot, 512}), "bf16_dot_zmm");
  EXPECT_EQ(ComputeOpKey({ComputeOp::kF32Fma, 512}), "f32_fma_zmm");
  EXPECT_EQ(ComputeOpKey({ComputeOp::kF32Fma, 256}), "f32_fma_ymm");
  EXPECT_EQ(ComputeOpKey({ComputeOp::kAmxInt8, 0}), "amx_int8");
  EXPECT_EQ(ComputeOpKey({ComputeOp::kAmxBf16, 0}), "amx_bf16");
  EXPECT_EQ(ComputeOpKey({ComputeOp::kScalar, 0}), "scalar");
  BenchRow row;
  for (const char* op : {"int8_vnni_zmm", "bf16_dot_zmm", "f32_fma_ymm"}) {
    row.compute_op = op;
    EXPECT_EQ(ComputePeakKeyFor(row, roof), op);
  }
  row.compute_op = PeerComputeOp(kImplOneDnnU8s8, "gemm:jit");
  EXPECT_EQ(row.compute_op, "int8_dot");
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "int8_vnni_zmm");  // the best
  row.compute_op = PeerComputeOp(kImplOneDnnBf16, "gemm:jit");
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "bf16_dot_zmm");
  row.compute_op = "";
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "");
}

TEST(BenchReport, ShortTableShowsEveryRowAndFailure) {
  const std::string text = Squeezed(FormatReport(SampleReport()));
  for (const char* needle :
       {"== layers", "da8w4 qkv 64 hot FAILED wrong output",
        "n/a n/a (oneDNN: unimplemented on this ISA)", "read DRAM-sized",
        "2 threads", "2024-01-02T03:04:05Z", "p50(us) min(us)",
        "w4a16 qkv 1 hot 900.0 810.0 55.9 50%", "python3 -m w4jit.report"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  EXPECT_EQ(text.find("== scaling"), std::string::npos) << text;
}

// A --scaling section: 1 and 2 threads of one backend.
BenchReport WithScaling() {
  BenchReport r = SampleReport();
  for (int t : {1, 2}) {
    ScalingRow s;
    s.impl = kImplDa8w4;
    s.backend = "pool";
    s.layer = "o_proj";
    s.n = s.k = 4096;
    s.m = 1;
    s.threads = t;
    s.samples = 20;
    s.time_us = t == 1 ? 300 : 160;
    s.min_us = s.time_us * 0.95;
    s.p90_us = s.time_us * 1.1;
    r.scaling.push_back(s);
  }
  return r;
}

TEST(BenchReport, ScalingSectionShowsTheTimes) {
  const std::string text = Squeezed(FormatReport(WithScaling()));
  for (const char* needle :
       {"== scaling", "da8w4 pool o_proj 1 2 160.0 152.0 176.0"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
  const nlohmann::json j = nlohmann::json::parse(ToJson(WithScaling()));
  ASSERT_EQ(j["scaling"].size(), 2u);
  EXPECT_EQ(j["scaling"][1]["threads"], 2);
  EXPECT_DOUBLE_EQ(j["scaling"][1]["time_us"].get<double>(), 160.0);
}

// A scaling row with a wrong output fails the run, as every section's does.
TEST(BenchReport, AFailedScalingRowFailsTheRun) {
  BenchReport r;
  r.scaling = WithScaling().scaling;
  EXPECT_FALSE(r.any_failed());
  r.scaling[1].status = RowStatus::kFailed;
  EXPECT_TRUE(r.any_failed());
}

// An --act-order section: an ok row, a FAILED one whose note needs CSV
// quoting and an n/a one.
BenchReport WithActOrder() {
  BenchReport r = SampleReport();
  ActOrderRow ok;
  ok.impl = kImplW4a16;
  ok.layer = "o_proj";
  ok.n = ok.k = 4096;
  ok.group_size = 128;
  ok.m = 16;
  ok.samples = 20;
  ok.plain_p50_us = 1000;
  ok.plain_min_us = 900;
  ok.act_p50_us = 1050;
  ok.act_min_us = 918;
  ok.copy_p50_us = 990;
  ok.copy_min_us = 909;
  r.act_order.push_back(ok);
  ActOrderRow failed = ok;
  failed.impl = kImplDa8w4;
  failed.status = RowStatus::kFailed;
  failed.note = "y[0, 1] = 2, \"reference\" 1";
  failed.samples = 0;
  failed.plain_p50_us = failed.plain_min_us = failed.act_p50_us =
      failed.act_min_us = failed.copy_p50_us = failed.copy_min_us = 0;
  r.act_order.push_back(failed);
  ActOrderRow unavailable = failed;
  unavailable.m = 1;
  unavailable.status = RowStatus::kNotAvailable;
  unavailable.note = "not on this CPU";
  r.act_order.push_back(unavailable);
  return r;
}

// bench.json's "act_order" keys, in order.
const char kActOrderHeader[] =
    "impl,layer,n,k,group_size,m,status,samples,plain_p50_us,plain_min_us,"
    "act_p50_us,act_min_us,copy_p50_us,copy_min_us,note";

TEST(BenchReport, ActOrderSectionShowsTheThreeTimes) {
  const std::string text = Squeezed(FormatReport(WithActOrder()));
  for (const char* needle :
       {"== act-order", "plain p50 act p50 copy p50", "1000.0 1050.0",
        "FAILED y[0, 1] = 2, \"reference\" 1", "n/a not on this CPU"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
}

TEST(BenchReport, ActOrderJsonHasEveryField) {
  const nlohmann::json none = nlohmann::json::parse(ToJson(SampleReport()));
  ASSERT_TRUE(none.contains("act_order"));
  EXPECT_EQ(none["act_order"], nlohmann::json::array());
  const nlohmann::json j = nlohmann::json::parse(ToJson(WithActOrder()));
  ASSERT_EQ(j["act_order"].size(), 3u);
  for (const auto& row : j["act_order"]) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : row.items()) keys.push_back(key);
    std::vector<std::string> expected = absl::StrSplit(kActOrderHeader, ',');
    std::sort(expected.begin(), expected.end());  // nlohmann sorts keys
    EXPECT_EQ(keys, expected);
  }
  const nlohmann::json& ok = j["act_order"][0];
  EXPECT_EQ(ok["impl"], "w4a16");
  EXPECT_EQ(ok["n"], 4096);
  EXPECT_EQ(ok["group_size"], 128);
  EXPECT_EQ(ok["m"], 16);
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_EQ(ok["samples"], 20);
  EXPECT_EQ(ok["plain_p50_us"], 1000.0);
  EXPECT_EQ(ok["act_min_us"], 918.0);
  EXPECT_EQ(ok["copy_min_us"], 909.0);
  EXPECT_EQ(j["act_order"][1]["status"], "FAILED");
  EXPECT_EQ(j["act_order"][1]["note"], "y[0, 1] = 2, \"reference\" 1");
  EXPECT_EQ(j["act_order"][2]["status"], "n/a");
  EXPECT_EQ(j["any_failed"], true);
}

TEST(BenchReport, JsonParsesWithEveryRequiredKey) {
  const BenchReport r = SampleReport();
  const nlohmann::json j = nlohmann::json::parse(ToJson(r));
  for (const char* key :
       {"schema", "w4jit_version", "onednn_version", "date_utc", "preset",
        "threads", "cpu", "options", "peaks", "bandwidths", "layers", "rows",
        "wait_policy", "scaling", "act_order", "any_failed"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["onednn_version"], "2.6.3");
  EXPECT_EQ(j["cpu"]["isa"], "avx2");
  EXPECT_TRUE(j["cpu"]["features"].contains("avx512vnni"));
  EXPECT_EQ(j["any_failed"], true);
  ASSERT_EQ(j["peaks"].size(), 3u);
  EXPECT_EQ(j["peaks"][2]["available"], false);
  EXPECT_EQ(j["peaks"][2]["note"], "n/a: CPU lacks AVX512_VNNI");
  ASSERT_EQ(j["rows"].size(), r.rows.size());
  // Every row has every key of a default row, whatever its status.
  BenchReport one;
  one.rows.emplace_back();
  const nlohmann::json keys = nlohmann::json::parse(ToJson(one))["rows"][0];
  for (const auto& row : j["rows"]) {
    for (auto it = keys.begin(); it != keys.end(); ++it) {
      EXPECT_TRUE(row.contains(it.key())) << it.key();
    }
  }
  EXPECT_EQ(j["rows"][0]["cache"], "hot");
  EXPECT_EQ(j["rows"].back()["status"], "FAILED");
  EXPECT_EQ(j["options"]["ms"], nlohmann::json::array({1, 8, 64}));
}

TEST(BenchReport, WritesAllFilesIntoTheDirectory) {
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "w4jit_bench_files/sub")
          .string();
  std::filesystem::remove_all(dir);
  absl::StatusOr<std::vector<std::string>> files =
      WriteBenchFiles(SampleReport(), "table text\n", dir);
  ASSERT_TRUE(files.ok()) << files.status();
  // The JSON and the text; tables and charts are w4jit.report's.
  ASSERT_EQ(files->size(), 2u);
  for (const std::string& f : *files) {
    EXPECT_TRUE(std::filesystem::exists(f)) << f;
    EXPECT_GT(std::filesystem::file_size(f), 0u) << f;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/bench.csv"));
  std::ifstream json(dir + "/bench.json");
  EXPECT_NO_THROW(nlohmann::json::parse(json));
  std::filesystem::remove_all(dir);
}

// A moe run: bench.json carries the rows under "moe", and the files are
// bench.json and bench.txt.
TEST(BenchReport, MoeRunWritesJsonAndText) {
  BenchReport report;
  report.date_utc = "2026-12-03T00:00:00Z";
  report.threads = 2;
  MoeBenchRow row;
  row.preset = "qwen3-30b-a3b";
  row.mode = Mode::kDA8W4;
  row.skewed = true;
  row.tokens = 4;
  row.threads = 2;
  row.min_us = 100.0;
  row.median_us = 120.0;
  row.touched_experts = 11;
  row.touched_bytes = 2e7;
  row.read_bytes_per_s = 4e11;
  row.macs = 1e8;
  row.peak_macs_per_s = 1e12;
  row.loop_min_us = 250.0;
  row.loop_median_us = 300.0;
  report.moe = {row, row};
  report.moe[1].skewed = false;

  const nlohmann::json none = nlohmann::json::parse(ToJson(SampleReport()));
  EXPECT_EQ(none["moe"], nlohmann::json::array());
  const nlohmann::json j = nlohmann::json::parse(ToJson(report));
  ASSERT_EQ(j["moe"].size(), 2u);
  const nlohmann::json& m = j["moe"][0];
  EXPECT_EQ(m["model"], "qwen3-30b-a3b");
  EXPECT_EQ(m["mode"], "da8w4");
  EXPECT_EQ(m["routing"], "skewed");
  EXPECT_EQ(j["moe"][1]["routing"], "uniform");
  EXPECT_EQ(m["tokens"], 4);
  EXPECT_EQ(m["touched_experts"], 11);
  EXPECT_DOUBLE_EQ(m["loop_median_us"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(m["read_bytes_per_s"].get<double>(), 4e11);
  EXPECT_NE(FormatReport(report).find("== moe"), std::string::npos)
      << FormatReport(report);

  EXPECT_EQ(m.size(), 14u);  // every MoeBenchRow field
  const std::string dir =
      (std::filesystem::path(::testing::TempDir()) / "w4jit_bench_moe")
          .string();
  std::filesystem::remove_all(dir);
  absl::StatusOr<std::vector<std::string>> files =
      WriteBenchFiles(report, "moe table\n", dir);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(*files, (std::vector<std::string>{dir + "/bench.json",
                                              dir + "/bench.txt"}));
  std::ifstream json(dir + "/bench.json");
  EXPECT_EQ(nlohmann::json::parse(json)["moe"].size(), 2u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace w4jit::perf
