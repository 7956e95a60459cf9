// The roofline measurement of `w4jit bench`: every peak loop JITs (AVX-512
// ones too, whose execution this CPU may lack), the peaks this CPU can run
// are positive and finite, unavailable ones say why, and read bandwidth is
// positive. Sanity only: never timed assertions.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "dispatch/amx_permission.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/ceilings/peak_loop_generator.h"
#include "perf/lib/ceilings/read_loop_generator.h"
#include "perf/lib/ceilings/roofline.h"

namespace w4jit::perf {
namespace {

RooflineOptions Tiny() {
  RooflineOptions o;
  o.seconds_per_sample = 0.002;
  o.samples = 1;
  return o;
}

TEST(BenchRoofline, EveryPeakLoopGenerates) {
  for (PeakOp op : AllPeakOps()) {
    PeakLoopGenerator gen(op);
    EXPECT_TRUE(gen.Create().ok()) << GetPeakOpInfo(op).key;
    EXPECT_GT(gen.MacsPerIteration(), 0);
    // At least 24 chains on 32 registers, 12 on AVX2's 16, 4 C tiles of
    // AMX's 8 tile registers.
    const std::string key = GetPeakOpInfo(op).key;
    EXPECT_GE(GetPeakOpInfo(op).chains, IsTileOp(op) ? 4
                                        : key.find("zmm") != std::string::npos
                                            ? 24
                                            : 12);
  }
}

TEST(BenchRoofline, ReadLoopGeneratesForBothWidths) {
  for (int width : {32, 64}) {
    ReadLoopGenerator gen(width);
    EXPECT_TRUE(gen.Create().ok()) << width;
    EXPECT_EQ(gen.block_bytes(), ReadLoopGenerator::kLoadsPerBlock * width);
  }
}

// Every stream split reads exactly its range: the pages after (and before)
// it are inaccessible, so a read outside crashes the test.
TEST(BenchRoofline, ReadLoopStaysInsideItsRange) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t bytes = 6 * page;
  auto* map = static_cast<uint8_t*>(mmap(nullptr, bytes + 2 * page, PROT_NONE,
                                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(map, MAP_FAILED);
  uint8_t* begin = map + page;
  ASSERT_EQ(mprotect(begin, bytes, PROT_READ | PROT_WRITE), 0);
  std::memset(begin, 1, bytes);
  for (int streams : {1, 2, 4, 8}) {
    ReadLoopGenerator gen(32, streams);
    ASSERT_TRUE(gen.Create().ok()) << streams;
    const ReadLoopGenerator::Args args{
        begin, static_cast<int64_t>(bytes) / gen.block_bytes(), 2};
    ASSERT_EQ(args.blocks * gen.block_bytes(), static_cast<int64_t>(bytes));
    if (internal::HostCpu().features.avx2) {
      gen.entry<ReadLoopGenerator::Fn>()(&args);
    }
  }
  munmap(map, bytes + 2 * page);
}

TEST(BenchRoofline, MissingFeatureNamesTheIsa) {
  internal::CpuFeatures avx2;
  avx2.avx2 = avx2.fma = true;
  EXPECT_EQ(MissingFeatureFor(PeakOp::kInt8DotAvx2, avx2), "");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kF32FmaYmm, avx2), "");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kF32FmaZmm, avx2), "AVX512F");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kInt8DotVnniZmm, avx2), "AVX512_VNNI");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kBf16DotZmm, avx2), "AVX512_BF16");
  internal::CpuFeatures vnni = avx2;
  vnni.avx512f = vnni.avx512bw = vnni.avx512vl = vnni.avx512dq = true;
  vnni.avx512vnni = true;
  EXPECT_EQ(MissingFeatureFor(PeakOp::kInt8DotVnniZmm, vnni), "");
  EXPECT_EQ(MissingFeatureFor(PeakOp::kBf16DotZmm, vnni), "AVX512_BF16");
}

TEST(BenchRoofline, ComputePeaksArePositiveOrExplained) {
  const internal::CpuFeatures& cpu = internal::HostCpu().features;
  for (PeakOp op : AllPeakOps()) {
    absl::StatusOr<ComputePeak> peak = MeasureComputePeak(op, Tiny());
    ASSERT_TRUE(peak.ok()) << peak.status();
    const std::string missing = MissingFeatureFor(op, cpu);
    if (!missing.empty()) {
      EXPECT_FALSE(peak->available);
      EXPECT_EQ(peak->note, "n/a: CPU lacks " + missing);
      continue;
    }
    // AMX also needs Linux's permission (bench_amx_test.cc).
    if (absl::Status s =
            IsTileOp(op) ? internal::RequestAmxTileData() : absl::OkStatus();
        !s.ok()) {
      EXPECT_FALSE(peak->available);
      EXPECT_EQ(peak->note, absl::StrCat("n/a: ", s.message()));
      continue;
    }
    EXPECT_TRUE(peak->available) << peak->key;
    EXPECT_TRUE(std::isfinite(peak->macs_per_s)) << peak->key;
    EXPECT_GT(peak->macs_per_s, 0.0) << peak->key;
    EXPECT_GE(peak->threads, 1);
  }
}

TEST(BenchRoofline, ReadBandwidthIsPositive) {
  absl::StatusOr<ReadBandwidth> bw =
      MeasureReadBandwidth(256 * 1024, "test", Tiny());
  ASSERT_TRUE(bw.ok()) << bw.status();
  EXPECT_GE(bw->bytes, 256 * 1024);
  EXPECT_TRUE(std::isfinite(bw->bytes_per_s));
  EXPECT_GT(bw->bytes_per_s, 0.0);
  EXPECT_TRUE(bw->vector_bytes == 32 || bw->vector_bytes == 64);
  EXPECT_FALSE(MeasureReadBandwidth(0, "none", Tiny()).ok());
}

TEST(BenchRoofline, ProbesRunBothWays) {
  absl::StatusOr<std::unique_ptr<CeilingProbe>> read =
      CeilingProbe::Read(100 * 1000, 1e-4);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_GE((*read)->bytes(), 100 * 1000);
  EXPECT_GE((*read)->units_per_run(), (*read)->bytes());
  EXPECT_GT((*read)->Run(), 0.0);
  (*read)->RunShared();
  absl::StatusOr<std::unique_ptr<CeilingProbe>> compute =
      CeilingProbe::Compute(PeakOp::kF32FmaYmm, 1e-4);
  if (!MissingFeatureFor(PeakOp::kF32FmaYmm, internal::HostCpu().features)
           .empty()) {
    GTEST_SKIP() << "CPU lacks AVX2/FMA: compute probe not run";
  }
  ASSERT_TRUE(compute.ok()) << compute.status();
  EXPECT_GT((*compute)->units_per_run(), 0.0);
  EXPECT_GT((*compute)->Run(), 0.0);
  (*compute)->RunShared();
}

TEST(BenchRoofline, BandwidthLookupTakesTheNearestFootprint) {
  Roofline roof;
  EXPECT_EQ(roof.BandwidthFor(1000), nullptr);
  roof.bandwidths = {{"small", 1 << 10, 1.0, 1, 32},
                     {"large", 1 << 30, 2.0, 1, 32}};
  EXPECT_EQ(roof.BandwidthFor(1 << 12)->label, "small");
  EXPECT_EQ(roof.BandwidthFor(1 << 28)->label, "large");
  // A footprint within 10% of a measured one is not measured again.
  ASSERT_TRUE(AddBandwidthFor((1 << 10) + 50, "again", Tiny(), &roof).ok());
  EXPECT_EQ(roof.bandwidths.size(), 2u);
  ASSERT_TRUE(AddBandwidthFor(1 << 20, "middle", Tiny(), &roof).ok());
  EXPECT_EQ(roof.bandwidths.size(), 3u);
  EXPECT_EQ(roof.BandwidthFor(1 << 20)->label, "middle");
}

}  // namespace
}  // namespace w4jit::perf
