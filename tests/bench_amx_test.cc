// The bench on CPUs with AMX: the AMX peak loops (skipped with the reason
// where the CPU or the OS has no AMX; a positive rate where it has: no
// timing is asserted), and the judgement of peers that run AMX against
// those peaks, never against the vector peaks, in the table, CSV, JSON and
// roofline chart.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "dispatch/amx_permission.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/ceilings/peak_loop_generator.h"
#include "perf/lib/ceilings/roofline.h"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/report/row_metrics.h"
#include "runtime/threads/parallel.h"
#include "tests/bench_sample_report.h"

namespace w4jit::perf {
namespace {

constexpr PeakOp kTileOps[] = {PeakOp::kAmxBf16, PeakOp::kAmxInt8};

// The reason this process cannot run `op`, or "" if it can.
std::string WhyNoTiles(PeakOp op) {
  const std::string missing =
      MissingFeatureFor(op, internal::HostCpu().features);
  if (!missing.empty()) return "CPU lacks " + missing;
  const absl::Status granted = internal::RequestAmxTileData();
  return granted.ok() ? "" : std::string(granted.message());
}

TEST(BenchAmx, MissingFeatureNamesTheAmxPart) {
  internal::CpuFeatures cpu;
  cpu.avx2 = cpu.fma = cpu.avx512f = cpu.avx512bw = true;
  cpu.avx512vnni = cpu.avx512bf16 = true;
  EXPECT_EQ(MissingFeatureFor(PeakOp::kAmxBf16, cpu), "AMX_TILE");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kAmxInt8, cpu), "AMX_TILE");
  cpu.amx_tile = true;
  EXPECT_EQ(MissingFeatureFor(PeakOp::kAmxBf16, cpu), "AMX_BF16");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kAmxInt8, cpu), "AMX_INT8");
  cpu.amx_bf16 = cpu.amx_int8 = true;
  EXPECT_EQ(MissingFeatureFor(PeakOp::kAmxBf16, cpu), "");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kAmxInt8, cpu), "");
  EXPECT_TRUE(IsTileOp(PeakOp::kAmxBf16) && IsTileOp(PeakOp::kAmxInt8));
  EXPECT_FALSE(IsTileOp(PeakOp::kInt8DotVnniZmm));
}

// Emitting needs no AMX: the loops JIT on every CPU, with four C tiles.
TEST(BenchAmx, TileLoopsGenerateEverywhere) {
  for (PeakOp op : kTileOps) {
    PeakLoopGenerator gen(op);
    EXPECT_TRUE(gen.Create().ok()) << GetPeakOpInfo(op).key;
    EXPECT_EQ(GetPeakOpInfo(op).chains, 4);
    EXPECT_EQ(gen.MacsPerIteration(),
              PeakLoopGenerator::kUnroll * 4 * GetPeakOpInfo(op).macs_per_step);
  }
  EXPECT_EQ(GetPeakOpInfo(PeakOp::kAmxBf16).macs_per_step, 16 * 16 * 32);
  EXPECT_EQ(GetPeakOpInfo(PeakOp::kAmxInt8).macs_per_step, 16 * 16 * 64);
}

// Where the CPU has AMX and Linux grants the tiles, each loop runs on all
// threads and gives a positive, finite rate; elsewhere the roofline marks
// the peak unavailable with the same reason.
TEST(BenchAmx, PeakIsPositiveWhereTheCpuHasAmx) {
  RooflineOptions tiny;
  tiny.seconds_per_sample = 0.002;
  tiny.samples = 1;
  std::string skipped;
  for (PeakOp op : kTileOps) {
    absl::StatusOr<ComputePeak> peak = MeasureComputePeak(op, tiny);
    ASSERT_TRUE(peak.ok()) << peak.status();
    const std::string why = WhyNoTiles(op);
    if (!why.empty()) {
      EXPECT_FALSE(peak->available);
      EXPECT_TRUE(absl::StrContains(peak->note, why)) << peak->note;
      skipped += std::string(skipped.empty() ? "" : "; ") +
                 GetPeakOpInfo(op).key + " not run: " + why;
      continue;
    }
    EXPECT_TRUE(peak->available) << peak->note;
    EXPECT_TRUE(std::isfinite(peak->macs_per_s)) << peak->key;
    EXPECT_GT(peak->macs_per_s, 0.0) << peak->key;
    EXPECT_EQ(peak->threads, internal::Concurrency());
    // The probe the bench interleaves with rows runs both ways too.
    absl::StatusOr<std::unique_ptr<CeilingProbe>> probe =
        CeilingProbe::Compute(op, 1e-4);
    ASSERT_TRUE(probe.ok()) << probe.status();
    EXPECT_GT((*probe)->Run(), 0.0);
    (*probe)->RunShared();
  }
  if (!skipped.empty()) GTEST_SKIP() << skipped;
}

// A roofline with the vector peaks of an AVX-512 BF16 Xeon and the AMX
// peaks an order of magnitude above them.
Roofline AmxRoofline() {
  Roofline roof = SampleReport().roofline;
  roof.peaks.clear();
  for (const auto& [key, gmacs] :
       std::vector<std::pair<const char*, double>>{{"int8_vnni_zmm", 1000},
                                                   {"bf16_dot_zmm", 100},
                                                   {"f32_fma_zmm", 250},
                                                   {"amx_bf16", 2000},
                                                   {"amx_int8", 4000}}) {
    ComputePeak p;
    p.key = key;
    p.available = true;
    p.macs_per_s = gmacs * 1e9;
    p.chains = absl::StartsWith(key, "amx_") ? 4 : 24;
    roof.peaks.push_back(p);
  }
  return roof;
}

// oneDNN bf16 at M = 16 on a 4096 x 4096 layer: 268 M MACs, 2684 us at the
// 100 G bf16 vector peak, 134 us at the 2000 G AMX one; 33.6 MB of bf16
// weights at the sample's 30 GB/s L3 read, 1118 us.
BenchRow OneDnnBf16Row(const std::string& kernel, double time_us) {
  BenchRow row =
      SampleRow(kImplOneDnnBf16, 16, false, time_us, int64_t{4096} * 4096 * 2);
  row.n = row.k = 4096;
  row.kernel = kernel;
  row.compute_op = PeerComputeOp(kImplOneDnnBf16, kernel);
  return row;
}

TEST(BenchAmx, PeakKeyFollowsAmxInThePeersImplementation) {
  const Roofline roof = AmxRoofline();
  BenchRow row;
  row.compute_op = PeerComputeOp(kImplOneDnnBf16, "brg:avx512_core_amx_bf16");
  EXPECT_TRUE(RunsAmx(row));
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "amx_bf16");
  row.compute_op = PeerComputeOp(kImplOneDnnU8s8, "brg:avx512_core_amx_int8");
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "amx_int8");
  row.compute_op = PeerComputeOp(kImplOneDnnU8s8, "brg:avx512_core_vnni");
  EXPECT_FALSE(RunsAmx(row));
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "int8_vnni_zmm");
  // A w4jit row judged by what its layer says it computes with.
  row.compute_op = ComputeOpKey({ComputeOp::kInt8Dot, 512});
  EXPECT_FALSE(RunsAmx(row));
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "int8_vnni_zmm");
  row.compute_op = ComputeOpKey({ComputeOp::kAmxInt8, 0});
  EXPECT_TRUE(RunsAmx(row));
  EXPECT_EQ(ComputePeakKeyFor(row, roof), "amx_int8");
}

// The issue this answers: oneDNN's AMX rows at M = 16 ran at 124-305% of
// the bf16 vector peak and were called disturbed. Over the AVX-512
// ceiling but under AMX's, a row is not disturbed.
TEST(BenchAmx, RowOverTheVectorPeakButUnderAmxIsNotDisturbed) {
  const Roofline roof = AmxRoofline();
  BenchRow amx = OneDnnBf16Row("oneDNN brg:avx512_core_amx_bf16", 2000);
  FillRowMetrics(roof, &amx);
  EXPECT_EQ(amx.compute_basis, "peak amx_bf16");
  EXPECT_NEAR(amx.compute_peak_gmacs, 2000.0, 1e-9);
  EXPECT_NEAR(amx.compute_bound_us, 16.0 * 4096 * 4096 / 2000e9 * 1e6, 1e-9);
  EXPECT_EQ(amx.bound, kBoundMemory);  // 1118 us of reading binds
  EXPECT_LE(amx.roofline_pct, 100.0);
  EXPECT_TRUE(amx.note.empty()) << amx.note;
  // The same time from a vector kernel is beyond its peak: disturbed.
  BenchRow vector = OneDnnBf16Row("oneDNN brg:avx512_core_bf16", 2000);
  FillRowMetrics(roof, &vector);
  EXPECT_EQ(vector.compute_basis, "peak bf16_dot_zmm");
  EXPECT_GT(vector.roofline_pct, 100.0);
  EXPECT_TRUE(absl::StrContains(vector.note, "disturbed")) << vector.note;
  // Faster than even the AMX roofline (here its read): disturbed after all.
  BenchRow beyond = OneDnnBf16Row("oneDNN brg:avx512_core_amx_bf16", 500);
  FillRowMetrics(roof, &beyond);
  EXPECT_TRUE(absl::StrContains(beyond.note, "disturbed")) << beyond.note;
}

// Without an AMX peak (CPU without AMX, refused permission) an AMX row has
// no compute bound and says so; the vector peaks do not stand in.
TEST(BenchAmx, AmxRowWithoutAmxPeakHasOnlyTheMemoryBound) {
  Roofline roof = AmxRoofline();
  for (ComputePeak& p : roof.peaks) {
    if (absl::StartsWith(p.key, "amx_")) {
      p.available = false;
      p.note = "n/a: Linux refused AMX tile data";
    }
  }
  BenchRow row = OneDnnBf16Row("oneDNN brg:avx512_core_amx_bf16", 2000);
  FillRowMetrics(roof, &row);
  EXPECT_EQ(row.compute_basis, "");
  EXPECT_EQ(row.compute_bound_us, 0.0);
  EXPECT_EQ(row.bound, kBoundMemory);
  EXPECT_TRUE(absl::StrContains(row.note, "no AMX peak")) << row.note;
  EXPECT_FALSE(absl::StrContains(row.note, "disturbed")) << row.note;
}

// The AMX peaks in the table's ceilings, bench.json's peaks and rows
// (compute_basis, compute_peak_gmacs).
TEST(BenchAmx, OutputsShowTheAmxPeaks) {
  BenchReport r = SampleReport();
  r.roofline = AmxRoofline();
  r.rows = {OneDnnBf16Row("oneDNN brg:avx512_core_amx_bf16", 2000)};
  for (BenchRow& row : r.rows) FillRowMetrics(r.roofline, &row);
  const std::string text = FormatReport(r);
  EXPECT_TRUE(absl::StrContains(text, "amx_bf16 2000 GMAC/s")) << text;
  EXPECT_TRUE(absl::StrContains(Squeezed(text), "56% L3 read 16.8 MB amx_bf16"))
      << text;
  const nlohmann::json j = nlohmann::json::parse(ToJson(r));
  int amx_peaks = 0;
  for (const auto& p : j["peaks"]) {
    if (absl::StartsWith(p["key"].get<std::string>(), "amx_")) ++amx_peaks;
  }
  EXPECT_EQ(amx_peaks, 2);
  EXPECT_EQ(j["rows"][0]["compute_basis"], "peak amx_bf16");
  EXPECT_NEAR(j["rows"][0]["compute_peak_gmacs"].get<double>(), 2000.0, 1e-9);
}

}  // namespace
}  // namespace w4jit::perf
