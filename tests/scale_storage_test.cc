// 16-bit scale storage (runtime/scale_storage.h): the packed scales (and
// the W4A16 bf16-dot flavour's float zero points) are stored as bf16 or f16
// where every value is exact in it, and widened exactly by the kernels. So
// a layer must give the same bits with 16-bit storage as with f32 storage
// (meta_16bit = 0), on every path (W4A16: the int4 kernel's short and tall
// tiles, the dequantize + panel path; DA8W4: the in-loop tiles and the
// decoded panels) and every tier the machine runs, and agree with the
// reference.
#include "runtime/scale_storage.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/jit_kernels.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::testing {
namespace {

using internal::IsaTier;
using internal::ScopedW4a16ParamsOverride;
using internal::W4a16Params;

struct MetaCase {
  WeightType weight_type;
  DType scale_dtype;
  bool float_zero;  // u4 with bf16 float zero points (tinygemm / HQQ)
  // The kernel-name suffix the int4 kernel must carry with meta_16bit on
  // ("" for f32 meta).
  const char* suffix;
};

std::string DescribeCase(const MetaCase& c) {
  return absl::StrCat(ToString(c.weight_type), " scales ",
                      ToString(c.scale_dtype),
                      c.float_zero ? " float zero points" : "");
}

// Over every ISA path, its W4A16 flavour forced (the CPU's defaults may
// pick another: Intel's AVX512_BF16 CPUs default to the FMA flavour).
class W4a16MetaTest : public ::testing::TestWithParam<IsaPath> {};

TEST_P(W4a16MetaTest, SixteenBitMetaGivesTheSameBits) {
  const IsaPath path = GetParam();
  if (!testing::StartIsaPathRun(path)) {
    GTEST_SKIP() << WhyCannotRunTier(path.tier);
  }
  internal::ScopedIsaCap cap(path.tier);
  const internal::Flavor flavor = path.flavor;
  internal::ScopedW4a16ParamsOverride forced(
      [flavor](internal::W4a16Params* p) { p->flavor = flavor; });
  const bool f16c = internal::HostCpu().features.f16c;
  // The dot flavour folds u4 zero points into float ones, which then
  // decide the meta.
  const bool dot = flavor == internal::Flavor::kBf16Dot;
  const std::vector<MetaCase> cases = {
      {WeightType::kS4, DType::kF32, false, ""},
      {WeightType::kS4, DType::kBF16, false, "_mbf16"},
      {WeightType::kS4, DType::kF16, false, f16c ? "_mf16" : ""},
      // Folded u4 zero points: the meta holds 8 - z, exact in 16 bits.
      {WeightType::kU4, DType::kBF16, false, dot ? "_mbf16" : ""},
      {WeightType::kU4, DType::kF16, false, dot && f16c ? "_mf16" : ""},
      {WeightType::kU4, DType::kBF16, true, dot ? "_mbf16" : ""},
  };
  for (const MetaCase& c : cases) {
    for (int64_t group : {int64_t{32}, int64_t{-1}}) {
      LayerDesc desc =
          KernelTestDesc(Mode::kW4A16, 72, 256, group, c.weight_type,
                         DType::kBF16, DType::kBF16, true);
      desc.scale_dtype = c.scale_dtype;
      if (c.float_zero) {
        desc.zero_point_domain = ZeroPointDomain::kFloat;
        desc.zero_point_dtype = DType::kBF16;
      }
      SCOPED_TRACE(DescribeCase(c) + ", " + Describe(desc));
      const auto w = RandomWeights(desc, 21);
      auto compact = MakeLayer(desc, w);
      ASSERT_TRUE(compact.ok()) << compact.status();
      std::unique_ptr<Layer> wide;
      {
        ScopedW4a16ParamsOverride o([flavor](W4a16Params* p) {
          p->flavor = flavor;
          p->meta_16bit = false;
        });
        auto made = MakeLayer(desc, w);
        ASSERT_TRUE(made.ok()) << made.status();
        wide = *std::move(made);
      }
      const std::string name = (*compact)->kernel_names()[0];
      ASSERT_EQ(name.rfind("w4a16_", 0), 0u) << name;
      // The layer built the forced path (asked of it, not assumed).
      EXPECT_TRUE(KernelNameIs(name, path.flavour, path.suffix));
      for (const char* s : {"_mbf16", "_mf16"}) {
        const bool want = std::string(c.suffix) == s;
        EXPECT_EQ(name.find(std::string(s) + "_") != std::string::npos, want)
            << name;
      }
      for (const std::string& n : wide->kernel_names()) {
        EXPECT_EQ(n.find("_mbf16"), std::string::npos) << n;
        EXPECT_EQ(n.find("_mf16"), std::string::npos) << n;
      }
      // Short tiles, tall tiles and (FMA flavour) the panel path.
      for (int64_t m : {1, 3, 9, 17, 40}) {
        SCOPED_TRACE("M = " + std::to_string(m));
        const auto x = RandomActivations(desc, m, desc.k, 5 + m);
        EXPECT_TRUE(RunAndCheck(**compact, w, m, x, desc.k, desc.n));
        auto a = RunToF32(**compact, m, x, desc.k);
        auto b = RunToF32(*wide, m, x, desc.k);
        ASSERT_TRUE(a.ok() && b.ok());
        ASSERT_EQ(a->size(), b->size());
        EXPECT_EQ(std::memcmp(a->data(), b->data(), a->size() * sizeof(float)),
                  0);
      }
    }
  }
}

// DA8W4: scales only (zero points stay int32), both activation scalings.
class Da8w4ScaleTest : public ::testing::TestWithParam<IsaTier> {};

TEST_P(Da8w4ScaleTest, SixteenBitScalesGiveTheSameBits) {
  const IsaTier tier = GetParam();
  if (!testing::StartIsaRun(tier)) GTEST_SKIP() << WhyCannotRunTier(tier);
  internal::ScopedIsaCap cap(tier);
  const bool f16c = internal::HostCpu().features.f16c;
  struct Case {
    DType scale_dtype;
    const char* suffix;
  };
  const std::vector<Case> cases = {{DType::kF32, ""},
                                   {DType::kBF16, "_mbf16"},
                                   {DType::kF16, f16c ? "_mf16" : ""}};
  for (const Case& c : cases) {
    for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
      for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
        LayerDesc desc = KernelTestDesc(Mode::kDA8W4, 150, 320, 64, wt,
                                        DType::kBF16, DType::kBF16, true);
        desc.scale_dtype = c.scale_dtype;
        desc.act_quant = aq;
        SCOPED_TRACE(
            absl::StrCat(ToString(c.scale_dtype), " scales, ", Describe(desc)));
        const auto w = RandomWeights(desc, 41);
        // Panels from 16 rows on, so that M = 23 runs the decoded tiles.
        internal::Da8w4Params p =
            internal::DefaultDa8w4Params(internal::HostCpu(), tier);
        p.panel_min_m = 16;
        p.handover_m = 0;
        auto make = [&](bool narrow) {
          p.scales_16bit = narrow;
          std::string why;
          auto k = internal::MakeDa8w4JitKernel(desc, w, internal::HostCpu(),
                                                tier, p, &why);
          EXPECT_TRUE(k.ok()) << k.status();
          EXPECT_NE(k->get(), nullptr) << why;
          return *std::move(k);
        };
        const auto compact = make(true);
        const auto wide = make(false);
        ASSERT_TRUE(compact != nullptr && wide != nullptr);
        bool named = false;
        for (const std::string& n : compact->kernel_names()) {
          if (n.rfind("da8w4_", 0) != 0) continue;
          named = true;
          if (*c.suffix != '\0') {
            EXPECT_NE(n.find(std::string(c.suffix) + "_"), std::string::npos)
                << n;
          } else {
            EXPECT_EQ(n.find("_mbf16"), std::string::npos) << n;
            EXPECT_EQ(n.find("_mf16"), std::string::npos) << n;
          }
        }
        EXPECT_TRUE(named);
        for (int64_t m : {1, 5, 23}) {
          SCOPED_TRACE("M = " + std::to_string(m));
          const auto x = RandomActivations(desc, m, desc.k, 7 + m);
          std::vector<uint16_t> a(static_cast<size_t>(m * desc.n)), b = a;
          compact->Run({m, x.data(), desc.k, a.data(), desc.n});
          wide->Run({m, x.data(), desc.k, b.data(), desc.n});
          EXPECT_EQ(a, b);
        }
      }
    }
  }
  // And through the public API against the reference.
  LayerDesc desc = KernelTestDesc(Mode::kDA8W4, 100, 256, 32, WeightType::kS4,
                                  DType::kBF16, DType::kF32, false);
  desc.scale_dtype = DType::kF16;
  const auto w = RandomWeights(desc, 43);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  for (int64_t m : {1, 9, 40}) {
    const auto x = RandomActivations(desc, m, desc.k, m);
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n));
  }
}

TEST(ScaleStorage, F16ExactRoundTripsEveryHalf) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = internal::F16ToF32(static_cast<uint16_t>(h));
    uint16_t back = 0;
    const bool finite = ((h >> 10) & 0x1F) != 0x1F;
    ASSERT_EQ(internal::F32ToF16Exact(f, &back), finite) << h;
    if (finite) {
      ASSERT_EQ(back, h) << h;
    }
  }
  uint16_t h;
  // Too many mantissa bits, out of range above and below.
  EXPECT_FALSE(internal::F32ToF16Exact(1.0f + std::ldexp(1.0f, -11), &h));
  EXPECT_FALSE(internal::F32ToF16Exact(65520.0f, &h));
  EXPECT_FALSE(internal::F32ToF16Exact(std::ldexp(1.0f, -25), &h));
  EXPECT_FALSE(internal::F32ToF16Exact(3 * std::ldexp(1.0f, -25), &h));
}

TEST(ScaleStorage, ChooserTakesTheNarrowestExactDtype) {
  internal::ScaleDtypeChooser both(true);
  both.See(0.5f);
  both.See(-3.0f);
  EXPECT_EQ(both.Result(), DType::kBF16);
  both.See(1.0f + std::ldexp(1.0f, -9));  // f16, not bf16
  EXPECT_EQ(both.Result(), DType::kF16);
  internal::ScaleDtypeChooser no_f16c(false);
  no_f16c.See(1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(no_f16c.Result(), DType::kF32);
  internal::ScaleDtypeChooser wide(true);
  wide.See(1e-9f);  // below every half, and not bf16-exact
  EXPECT_EQ(wide.Result(), DType::kF32);
  EXPECT_FALSE(wide.AnyNarrow());
}

TEST(W4a16Meta, TuningParameterIsChecked) {
  const W4a16Params w4a16;
  absl::StatusOr<W4a16Params> p =
      internal::ApplyW4a16Params({{"meta_16bit", 0}}, w4a16, IsaTier::kAvx2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FALSE(p->meta_16bit);
  const absl::Status s =
      internal::ApplyW4a16Params({{"meta_16bit", 2}}, w4a16, IsaTier::kAvx2)
          .status();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("meta_16bit = 2"), std::string::npos) << s;
  const internal::Da8w4Params base;
  auto off =
      internal::ApplyDa8w4Params({{"meta_16bit", 0}}, base, IsaTier::kAvx2);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->scales_16bit);
  EXPECT_FALSE(
      internal::ApplyDa8w4Params({{"meta_16bit", 5}}, base, IsaTier::kAvx2)
          .ok());
}

INSTANTIATE_TEST_SUITE_P(Tiers, Da8w4ScaleTest,
                         ::testing::ValuesIn(testing::IsaTiers()),
                         testing::IsaTierName);

INSTANTIATE_TEST_SUITE_P(Tiers, W4a16MetaTest,
                         ::testing::ValuesIn(testing::IsaPaths()),
                         testing::IsaPathName);

}  // namespace
}  // namespace w4jit::testing
