// Per-CPU defaults as data (dispatch/default_rows.h): every row parses
// through its family's tuning parser, says where it comes from, and the
// rows give each CPU class the values it had as hand-written conditions.
#include "dispatch/default_rows.h"

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "dispatch/tuning.h"
#include "gtest/gtest.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/log.hpp"
#include "w4jit/tuning.hpp"

namespace w4jit::internal {
namespace {

CpuFeatures Avx512Bf16() {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = true;
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = true;
  f.avx512bf16 = true;
  return f;
}
CpuFeatures Avx2() {
  CpuFeatures f;
  f.avx2 = f.fma = f.f16c = true;
  return f;
}
CpuProfile Zen3() { return ClassifyCpu(Vendor::kAmd, 0x00A00F11, Avx2()); }
CpuProfile Zen4() {
  return ClassifyCpu(Vendor::kAmd, 0x00A10F11, Avx512Bf16());
}
CpuProfile Zen5() {
  return ClassifyCpu(Vendor::kAmd, 0x00B00F21, Avx512Bf16());
}
CpuProfile Zen5Fp256() {
  CpuFeatures f = Avx512Bf16();
  f.fp256 = true;
  return ClassifyCpu(Vendor::kAmd, 0x00B00F21, f);
}
CpuProfile Intel() {
  return ClassifyCpu(Vendor::kIntel, 0x000806F8, Avx512Bf16());
}

void ExpectWellFormed(const DefaultsRow& row) {
  SCOPED_TRACE(row.cpu_class);
  // Some tier has the row's features (else the row never holds).
  EXPECT_TRUE(TierHas(LeastTierWith(row.needs), row.needs)) << row.needs.str();
  const std::string source = row.source;
  EXPECT_FALSE(source.empty());
  if (row.evidence == Evidence::kMeasured) {
    EXPECT_EQ(source.rfind("docs/performance/", 0), 0u)
        << "a measured row names its run: " << source;
  }
}

// The tiers a row holds at: every tier with its features.
std::vector<IsaTier> TiersOf(const DefaultsRow& row) {
  std::vector<IsaTier> tiers;
  for (const IsaTraits& t : kIsaTraits) {
    if (t.Has(row.needs)) tiers.push_back(t.tier);
  }
  return tiers;
}

// Each row applies at every tier with its features, through the family's
// one Apply (the parameter table, then the check).
TEST(DefaultRowsTest, W4a16RowsApplyAndSayWhereTheyComeFrom) {
  for (const DefaultsRow& row : W4a16DefaultsRows()) {
    ExpectWellFormed(row);
    for (IsaTier t : TiersOf(row)) {
      const W4a16Params base = DefaultW4a16Params(Intel(), t);
      absl::StatusOr<W4a16Params> p = ApplyW4a16Params(row.params, base, t);
      EXPECT_TRUE(p.ok()) << row.cpu_class << ": " << p.status();
    }
  }
}

TEST(DefaultRowsTest, Da8w4RowsApplyAndSayWhereTheyComeFrom) {
  for (const DefaultsRow& row : Da8w4DefaultsRows()) {
    ExpectWellFormed(row);
    for (IsaTier t : TiersOf(row)) {
      const Da8w4Params base = DefaultDa8w4Params(Intel(), t);
      absl::StatusOr<Da8w4Params> p = ApplyDa8w4Params(row.params, base, t);
      EXPECT_TRUE(p.ok()) << row.cpu_class << ": " << p.status();
    }
  }
}

// A variant's class ("zen5-fp256") takes its family's rows ("zen5"): no
// row repeats another's values for a class of the same family.
TEST(DefaultRowsTest, NoRowCopiesAnotherOfItsFamily) {
  for (const std::vector<DefaultsRow>* rows :
       {&W4a16DefaultsRows(), &Da8w4DefaultsRows()}) {
    for (size_t i = 0; i < rows->size(); ++i) {
      for (size_t j = i + 1; j < rows->size(); ++j) {
        const DefaultsRow& a = (*rows)[i];
        const DefaultsRow& b = (*rows)[j];
        const std::string ca = a.cpu_class, cb = b.cpu_class;
        const bool family = ca == cb || cb.rfind(ca + "-", 0) == 0 ||
                            ca.rfind(cb + "-", 0) == 0;
        EXPECT_FALSE(family && a.params == b.params && a.needs == b.needs)
            << ca << " and " << cb;
      }
    }
  }
}

// The values the per-class conditions gave before they became rows.
TEST(DefaultRowsTest, ClassesGetTheirValues) {
  const W4a16Params zen4 = DefaultW4a16Params(Zen4(), IsaTier::kAvx512Bf16);
  EXPECT_EQ(zen4.flavor, Flavor::kBf16Dot);
  EXPECT_EQ(zen4.prefetch_distance, 4096);
  const W4a16Params zen4_vnni =
      DefaultW4a16Params(Zen4(), IsaTier::kAvx512Vnni);
  EXPECT_EQ(zen4_vnni.flavor, Flavor::kF32Fma);
  EXPECT_EQ(zen4_vnni.prefetch_distance, 4096);
  EXPECT_EQ(DefaultW4a16Params(Zen4(), IsaTier::kAvx2).prefetch_distance, 0);
  const W4a16Params zen5 = DefaultW4a16Params(Zen5(), IsaTier::kAvx512Bf16);
  EXPECT_EQ(zen5.flavor, Flavor::kBf16Dot);
  EXPECT_EQ(zen5.prefetch_distance, 8192);
  // zen5-fp256 takes the zen5 rows.
  ASSERT_EQ(CpuClassBase(Zen5Fp256()), "zen5-fp256");
  const W4a16Params fp256 =
      DefaultW4a16Params(Zen5Fp256(), IsaTier::kAvx512Bf16);
  EXPECT_EQ(fp256.flavor, Flavor::kBf16Dot);
  EXPECT_EQ(fp256.prefetch_distance, 8192);
  EXPECT_EQ(
      DefaultW4a16Params(Zen5Fp256(), IsaTier::kAvx512Vnni).prefetch_distance,
      8192);
  EXPECT_EQ(DefaultW4a16Params(Zen3(), IsaTier::kAvx2).prefetch_distance, 4096);
  const W4a16Params intel = DefaultW4a16Params(Intel(), IsaTier::kAvx512Bf16);
  EXPECT_EQ(intel.flavor, Flavor::kF32Fma);
  EXPECT_EQ(intel.prefetch_distance, 4096);
  EXPECT_EQ(DefaultW4a16Params(Intel(), IsaTier::kAvx2).prefetch_distance, 0);
  EXPECT_EQ(intel.vector_bits, 512);

  const Da8w4Params d4 = DefaultDa8w4Params(Zen4(), IsaTier::kAvx512Bf16);
  EXPECT_FALSE(d4.panels());
  EXPECT_EQ(d4.handover_m, 2);
  const Da8w4Params d5 = DefaultDa8w4Params(Zen5(), IsaTier::kAvx512Bf16);
  EXPECT_TRUE(d5.panels());
  EXPECT_EQ(d5.handover_m, 16);
  EXPECT_EQ(DefaultDa8w4Params(Zen4(), IsaTier::kAvx2).handover_m, 16);
  EXPECT_EQ(DefaultDa8w4Params(Intel(), IsaTier::kAvx512Vnni).prefetch_distance,
            4096);
  EXPECT_EQ(DefaultDa8w4Params(Zen5(), IsaTier::kAvx512Bf16).prefetch_distance,
            0);
}

TEST(DefaultRowsTest, MatchingRowsFollowClassAndTier) {
  const std::vector<DefaultsRow> rows = {
      {"zen4", IsaFeature::kAvx512, Evidence::kGuessed, "test", {}},
      {"zen3", IsaFeature::kAvx2, Evidence::kGuessed, "test", {}},
  };
  EXPECT_EQ(MatchingRows(rows, Zen4(), IsaTier::kAvx512Bf16).size(), 1u);
  EXPECT_TRUE(MatchingRows(rows, Zen4(), IsaTier::kAvx2).empty());
  EXPECT_EQ(MatchingRows(rows, Zen3(), IsaTier::kAvx2).size(), 1u);
  EXPECT_TRUE(MatchingRows(rows, Intel(), IsaTier::kAvx512Bf16).empty());
  EXPECT_EQ(CpuClassBase(Zen4()), "zen4");
  // A family's row holds for its variants, and only for them.
  const std::vector<DefaultsRow> family = {
      {"zen5", IsaFeature::kAvx2, Evidence::kGuessed, "test", {}}};
  EXPECT_EQ(MatchingRows(family, Zen5Fp256(), IsaTier::kAvx2).size(), 1u);
  EXPECT_EQ(MatchingRows(family, Zen5(), IsaTier::kAvx2).size(), 1u);
  EXPECT_TRUE(MatchingRows(family, Zen4(), IsaTier::kAvx2).empty());
  // A row asks for features, not for a range of tiers: the tile rows hold
  // where the kernels' tier has the tiles, the VNNI rows at every tier with
  // vpdpbusd on zmm.
  const std::vector<DefaultsRow> intel = {
      {"intel-avx512", IsaFeature::kAmxInt8, Evidence::kGuessed, "test", {}},
      {"intel-avx512",
       IsaFeature::kAvx512Vnni,
       Evidence::kGuessed,
       "test",
       {}}};
  EXPECT_EQ(MatchingRows(intel, Intel(), IsaTier::kAmx).size(), 2u);
  EXPECT_EQ(MatchingRows(intel, Intel(), IsaTier::kAvx512Bf16).size(), 1u);
  EXPECT_EQ(MatchingRows(intel, Intel(), IsaTier::kAvx512Vnni).size(), 1u);
  EXPECT_TRUE(MatchingRows(intel, Intel(), IsaTier::kAvx2).empty());
}

// One pipeline: a tuning entry this tier cannot run (a row tile too tall
// for the registers) is dropped with one warning and the defaults run,
// never the reference.
TEST(ParamResolutionTest, UnfitTuningEntryFallsBackToTheDefaultsOnce) {
  const IsaTier isa = ActiveIsa();
  if (!testing::CanRunTier(IsaTier::kAvx2) || TraitsOf(isa).vector_bytes == 0) {
    GTEST_SKIP() << testing::WhyCannotRunTier(IsaTier::kAvx2);
  }
  LayerDesc desc;
  desc.n = 64;
  desc.k = 256;
  desc.group_size = 128;
  desc.mode = Mode::kW4A16;
  const std::string path = ::testing::TempDir() + "/unfit_tuning.json";
  std::ofstream(path) << R"({"w4jit_tuning_version": 1,
      "cpu": {"class": ")"
                      << CpuClassOf(HostCpu(), isa)
                      << R"(", "name": "test"}, "created": "2026-12-05",
      "entries": [{"mode": "w4a16", "n": 64, "k": 256, "group_size": 128,
                   "params": {"gemv_mr": 40}}]})";
  ASSERT_TRUE(w4jit::LoadTuningFile(path).ok());
  int warnings = 0;
  std::string said;
  SetLogHook([&](LogLevel level, std::string_view m) {
    if (level == LogLevel::kWarning) {
      ++warnings;
      said = std::string(m);
    }
  });
  const W4a16Params p = ResolveW4a16Params(HostCpu(), isa, desc);
  SetLogHook(nullptr);
  EXPECT_EQ(warnings, 1);
  EXPECT_NE(said.find("vector registers"), std::string::npos) << said;
  EXPECT_EQ(p.gemv_mr, DefaultW4a16Params(HostCpu(), isa).gemv_mr);

  const auto w = testing::RandomWeights(desc, 1);
  auto layer = testing::MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const std::vector<std::string> names = (*layer)->kernel_names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0].rfind("w4a16", 0), 0u) << names[0];
  ASSERT_TRUE(w4jit::LoadTuningFile("").ok());
}

}  // namespace
}  // namespace w4jit::internal
