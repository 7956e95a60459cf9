// W4A16 16-bit meta (jit/w4a16_layout.h): the packed scales (and the
// bf16-dot flavour's float zero points) are stored as bf16 or f16 where
// every value is exact in it, and widened exactly by the kernels. So a
// layer must give the same bits with 16-bit meta as with f32 meta
// (meta_16bit = 0), on every path (the int4 kernel's short and tall
// tiles, the dequantize + panel path) and every tier the machine runs,
// and agree with the reference.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/w4a16_params.h"
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
  // ("" for f32 meta); nullptr: either (folded u4 zero points are exact
  // in 16 bits only by chance).
  const char* suffix;
};

std::string DescribeCase(const MetaCase& c) {
  return absl::StrCat(ToString(c.weight_type), " scales ",
                      ToString(c.scale_dtype),
                      c.float_zero ? " float zero points" : "");
}

class W4a16MetaTest : public ::testing::TestWithParam<IsaTier> {};

TEST_P(W4a16MetaTest, SixteenBitMetaGivesTheSameBits) {
  const IsaTier tier = GetParam();
  if (!CanRunTier(tier)) GTEST_SKIP() << WhyCannotRunTier(tier);
  internal::ScopedIsaCap cap(tier);
  const bool f16c = internal::HostCpu().features.f16c;
  // The dot flavour runs where the tier has AVX512_BF16 and x is bf16; it
  // folds u4 zero points into float ones, which then decide the meta.
  const bool dot = tier >= IsaTier::kAvx512Bf16;
  const std::vector<MetaCase> cases = {
      {WeightType::kS4, DType::kF32, false, ""},
      {WeightType::kS4, DType::kBF16, false, "_mbf16"},
      {WeightType::kS4, DType::kF16, false, f16c ? "_mf16" : ""},
      {WeightType::kU4, DType::kBF16, false, dot ? nullptr : ""},
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
        ScopedW4a16ParamsOverride o(
            [](W4a16Params* p) { p->meta_16bit = false; });
        auto made = MakeLayer(desc, w);
        ASSERT_TRUE(made.ok()) << made.status();
        wide = *std::move(made);
      }
      const std::string name = (*compact)->kernel_names()[0];
      ASSERT_EQ(name.rfind("w4a16_", 0), 0u) << name;
      if (c.suffix != nullptr) {
        for (const char* s : {"_mbf16", "_mf16"}) {
          const bool want = std::string(c.suffix) == s;
          EXPECT_EQ(name.find(std::string(s) + "_") != std::string::npos ||
                        name.find(std::string(s) + "__") != std::string::npos,
                    want)
              << name;
        }
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

TEST(W4a16Meta, TuningParameterIsChecked) {
  W4a16Params p;
  EXPECT_TRUE(internal::ApplyW4a16ParamMap({{"meta_16bit", 0}}, &p).ok());
  EXPECT_FALSE(p.meta_16bit);
  const absl::Status s = internal::ApplyW4a16ParamMap({{"meta_16bit", 2}}, &p);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("meta_16bit = 2"), std::string::npos) << s;
}

INSTANTIATE_TEST_SUITE_P(Tiers, W4a16MetaTest,
                         ::testing::Values(IsaTier::kAvx2, IsaTier::kAvx512Vnni,
                                           IsaTier::kAvx512Bf16),
                         [](const auto& info) {
                           return std::string(internal::ToString(info.param));
                         });

}  // namespace
}  // namespace w4jit::testing
