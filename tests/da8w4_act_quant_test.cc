// DA8W4 with per-group activation scales (ActQuant::kPerGroup) through the
// public API, per ISA tier: every M / N / K tail, group size, weight type,
// dtype, bias and stride against the reference; NaN / Inf confined to a
// group still make the row NaN; per-channel layers run the per-token
// kernels; act-order and fused epilogues; W4A16 refuses the choice; and
// with outlier channels the error is far below per-token's. (Bit-identity
// across threads, tiles and ISAs, and the exact integer part: the loops of
// da8w4_kernel_test.cc over both choices.)
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check/accuracy.h"
#include "check/layer_check.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/jit_kernels.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"

namespace w4jit {
namespace {

using internal::CanonicalWeights;
using internal::IsaTier;
using testing::Describe;
using testing::MakeLayer;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunAndCheck;

LayerDesc PerGroupDesc(int64_t n, int64_t k, int64_t group, WeightType type,
                       DType act, DType out, bool bias) {
  LayerDesc d =
      testing::KernelTestDesc(Mode::kDA8W4, n, k, group, type, act, out, bias);
  d.act_quant = ActQuant::kPerGroup;
  return d;
}

std::string NamesOf(const Layer& layer) {
  std::string s;
  for (const std::string& n : layer.kernel_names()) s += n + " ";
  return s;
}

class Da8w4PerGroupTest : public ::testing::TestWithParam<IsaTier> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(GetParam())) {
      GTEST_SKIP() << testing::WhyCannotRunTier(GetParam());
    }
    cap_ = std::make_unique<internal::ScopedIsaCap>(GetParam());
  }

  // Builds the layer (asserting per-group JIT kernels) and checks m rows.
  void Check(const LayerDesc& desc, int64_t m, int64_t ldx, int64_t ldy,
             uint32_t seed, bool act_order = false) {
    SCOPED_TRACE(Describe(desc) +
                 absl::StrCat(" m=", m, act_order ? " act-order" : ""));
    CanonicalWeights w = RandomWeights(desc, seed);
    if (act_order) w.k_perm = testing::RandomActOrder(desc, seed + 7);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const std::string names = NamesOf(**layer);
    ASSERT_NE(names.find("quant_"), std::string::npos) << names;
    ASSERT_NE(names.find("_agroup"), std::string::npos) << names;
    const auto x = RandomActivations(desc, m, ldx, seed + 1);
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy));
  }

 private:
  std::unique_ptr<internal::ScopedIsaCap> cap_;
};

TEST_P(Da8w4PerGroupTest, GroupsTailsTypesAndStrides) {
  struct Case {
    int64_t n, k, group;
  };
  const std::vector<Case> cases = {
      {1, 64, 32},    {7, 64, 32},   {17, 128, 64},  {33, 256, 128},
      {48, 96, 12},   {24, 100, 20}, {64, 24, 4},    {20, 384, 128},
      {96, 512, 256}, {40, 520, 8},  {150, 320, 64}, {5, 120, 60}};
  uint32_t seed = 10;
  for (const Case& c : cases) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      for (DType act : {DType::kBF16, DType::kF32}) {
        const DType out = seed % 2 ? DType::kF32 : DType::kBF16;
        const LayerDesc desc =
            PerGroupDesc(c.n, c.k, c.group, type, act, out, seed % 3 != 0);
        // 1: GEMV; 5, 13: GEMM tiles; 40: the decoded-panel path.
        for (int64_t m : {1, 5, 13, 40}) {
          Check(desc, m, c.k + (seed % 4) * 3, c.n + (seed % 5), seed);
          ++seed;
        }
      }
    }
  }
}

TEST_P(Da8w4PerGroupTest, EveryMTailAndActOrder) {
  const LayerDesc desc = PerGroupDesc(40, 256, 64, WeightType::kU4,
                                      DType::kBF16, DType::kBF16, true);
  for (int64_t m : {1, 2, 3, 6, 7, 13, 16, 17, 29, 32, 33, 48, 49, 97}) {
    Check(desc, m, desc.k, desc.n, 100 + static_cast<uint32_t>(m));
    Check(desc, m, desc.k, desc.n, 200 + static_cast<uint32_t>(m),
          /*act_order=*/true);
  }
  Check(PerGroupDesc(48, 4096, 128, WeightType::kS4, DType::kF32, DType::kF32,
                     false),
        3, 4100, 50, 5, /*act_order=*/true);
}

TEST_P(Da8w4PerGroupTest, FusedEpilogues) {
  for (const bool silu_mul : {false, true}) {
    LayerDesc desc = PerGroupDesc(64, 256, 32, WeightType::kS4, DType::kBF16,
                                  DType::kBF16, true);
    Epilogue& e = desc.epilogue;
    if (silu_mul) {
      e.silu_mul = true;
    } else {
      e.activation = Activation::kGeluTanh;
    }
    e.num_binary = 2;
    e.binary[0] = {BinaryOp::kMul, DType::kF32};
    e.binary[1] = {BinaryOp::kAdd, DType::kBF16};
    const CanonicalWeights w = RandomWeights(desc, 3);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    for (int64_t m : {1, 9, 40}) {
      const auto x = RandomActivations(desc, m, desc.k, 4);
      const check::EpilogueOperands ops =
          check::RandomEpilogueOperands(desc, m, 3, 5);
      const check::CheckResult r = check::CheckRun(
          **layer, w, m, x.data(), desc.k, desc.out_n() + 1, nullptr, &ops);
      EXPECT_TRUE(r.ok()) << "silu_mul=" << silu_mul << " m=" << m << "\n"
                          << r.report;
    }
  }
}

// NaN or Inf in one group: that group's scale is NaN, and so is every
// output of the row (as per token); the other rows are untouched.
TEST_P(Da8w4PerGroupTest, NonFiniteGroupMakesTheRowNaN) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    const LayerDesc desc =
        PerGroupDesc(40, 128, 32, WeightType::kU4, act, DType::kBF16, true);
    const CanonicalWeights w = RandomWeights(desc, 5);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    for (int64_t m : {7, 40}) {
      auto x = RandomActivations(desc, m, desc.k, 6);
      testing::SetActivation(desc, &x, desc.k, 1, 100, std::nanf(""));
      testing::SetActivation(desc, &x, desc.k, 3, 0, INFINITY);
      testing::SetActivation(desc, &x, desc.k, 4, 127, -INFINITY);
      for (int64_t j = 32; j < 64; ++j) {
        testing::SetActivation(desc, &x, desc.k, 5, j, 0.0f);  // a zero group
      }
      testing::SetActivation(desc, &x, desc.k, 6, 64, 3.0e38f);
      EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n));
      auto y = testing::RunToF32(**layer, m, x, desc.k);
      ASSERT_TRUE(y.ok());
      for (int64_t j = 0; j < desc.n; ++j) {
        EXPECT_TRUE(std::isnan((*y)[1 * desc.n + j]));
        EXPECT_TRUE(std::isnan((*y)[3 * desc.n + j]));
        EXPECT_TRUE(std::isnan((*y)[4 * desc.n + j]));
        EXPECT_FALSE(std::isnan((*y)[5 * desc.n + j]));
      }
    }
  }
}

// One group over K: per-group scales are the per-token ones, so the layer
// runs the per-token kernels and gives the same bits.
TEST_P(Da8w4PerGroupTest, PerChannelIsPerToken) {
  for (int64_t group : {int64_t{-1}, int64_t{96}}) {
    LayerDesc desc = PerGroupDesc(40, 96, group, WeightType::kS4, DType::kBF16,
                                  DType::kF32, true);
    const CanonicalWeights w = RandomWeights(desc, 8);
    auto grouped = MakeLayer(desc, w);
    desc.act_quant = ActQuant::kPerToken;
    auto token = MakeLayer(desc, w);
    ASSERT_TRUE(grouped.ok() && token.ok());
    EXPECT_EQ((*grouped)->kernel_names(), (*token)->kernel_names());
    EXPECT_EQ((*grouped)->desc().act_quant, ActQuant::kPerGroup);
    const auto x = RandomActivations(desc, 9, desc.k, 9);
    EXPECT_EQ(*testing::RunToF32(**grouped, 9, x, desc.k),
              *testing::RunToF32(**token, 9, x, desc.k));
  }
}

// Activations with 8 outlier channels x50: per-group scales keep the
// other channels' resolution (about 4x less error here; with 8 groups
// over K it would be 2x, as most groups then hold an outlier). (README "What it
// computes" has the figures of `w4jit bench --accuracy`.)
TEST_P(Da8w4PerGroupTest, OutliersCostPerTokenFarMore) {
  // K = 4096: 32 groups, at most 8 of them with an outlier.
  LayerDesc desc = PerGroupDesc(64, 4096, 128, WeightType::kS4, DType::kBF16,
                                DType::kF32, false);
  const CanonicalWeights w = RandomWeights(desc, 11);
  const auto x = check::OutlierActivations(desc, 8, desc.k, {8, 50.0f}, 12);
  auto grouped = MakeLayer(desc, w);
  desc.act_quant = ActQuant::kPerToken;
  auto token = MakeLayer(desc, w);
  desc.mode = Mode::kW4A16;
  auto w4a16 = MakeLayer(desc, w);
  ASSERT_TRUE(grouped.ok() && token.ok() && w4a16.ok());
  const double e_group =
      *check::LayerRelativeError(**grouped, w, 8, x.data(), desc.k);
  const double e_token =
      *check::LayerRelativeError(**token, w, 8, x.data(), desc.k);
  const double e_w4a16 =
      *check::LayerRelativeError(**w4a16, w, 8, x.data(), desc.k);
  EXPECT_LT(e_group * 3, e_token) << e_group << " vs " << e_token;
  EXPECT_LT(e_w4a16, e_group) << e_w4a16 << " vs " << e_group;
}

INSTANTIATE_TEST_SUITE_P(Isa, Da8w4PerGroupTest,
                         ::testing::ValuesIn(testing::Da8w4IsaTiers()),
                         testing::IsaTierName);

TEST(Da8w4PerGroupValidation, W4a16RefusesPerGroup) {
  LayerDesc desc =
      testing::KernelTestDesc(Mode::kW4A16, 16, 64, 32, WeightType::kS4,
                              DType::kBF16, DType::kBF16, false);
  desc.act_quant = ActQuant::kPerGroup;
  auto layer = MakeLayer(desc, RandomWeights(desc, 1));
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("act_quant = per_group"),
            std::string::npos)
      << layer.status();
  desc.mode = Mode::kDA8W4;
  desc.act_quant = static_cast<ActQuant>(7);
  layer = MakeLayer(desc, RandomWeights(desc, 1));
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("act_quant = 7"), std::string::npos)
      << layer.status();
}

// The AVX-512 per-group kernels are generated on every machine.
TEST(Da8w4PerGroupGeneration, BothTiersGenerate) {
  for (IsaTier isa : testing::Da8w4IsaTiers()) {
    std::string why;
    const LayerDesc desc = PerGroupDesc(100, 512, 128, WeightType::kU4,
                                        DType::kBF16, DType::kBF16, true);
    auto kernel = internal::MakeDa8w4JitKernel(desc, RandomWeights(desc, 2),
                                               internal::HostCpu(), isa, &why);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    ASSERT_NE(kernel->get(), nullptr) << why;
    for (const std::string& n : (*kernel)->kernel_names()) {
      if (n.rfind("da8w4dec", 0) == 0) continue;
      EXPECT_NE(n.find("_agroup"), std::string::npos) << n;
    }
  }
}

}  // namespace
}  // namespace w4jit
