// The test utilities themselves: generators produce what they promise and
// RunAndCheck catches wrong results (a checker that never fails proves
// nothing about the kernels it checks).
#include "tests/util/test_layer.h"

#include <cmath>
#include <cstring>

#include "base/numeric.h"
#include "gtest/gtest.h"

namespace w4jit::testing {
namespace {

bool ExactIn(float v, DType t) {
  if (t == DType::kF32) return true;
  const uint16_t h = internal::F32ToBf16(v);
  if (t == DType::kBF16) return internal::Bf16ToF32(h) == v;
  // f16: 10 mantissa bits and the normal exponent range [-14, 15].
  int e;
  const float f = std::frexp(std::fabs(v), &e);  // f in [0.5, 1)
  return e - 1 >= -14 && e - 1 <= 15 &&
         std::ldexp(f, 11) == std::floor(std::ldexp(f, 11));
}

TEST(TestLayer, RandomWeightsKeepTheirPromises) {
  for (DType scale : {DType::kF32, DType::kBF16, DType::kF16}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      LayerDesc d;
      d.n = 40;
      d.k = 96;
      d.group_size = 32;
      d.weight_type = type;
      d.scale_dtype = scale;
      d.has_bias = true;
      d.bias_dtype = DType::kBF16;
      const auto w = RandomWeights(d, 5);
      EXPECT_EQ(w.groups, 3);
      EXPECT_EQ(w.group_size, 32);
      ASSERT_EQ(w.u.size(), 40u * 96u);
      bool saw_negative = false, saw_positive = false, saw_zero_not_8 = false;
      for (uint8_t u : w.u) EXPECT_LE(u, 15);
      for (uint8_t z : w.zeros) {
        EXPECT_LE(z, 15);
        if (type == WeightType::kS4) {
          EXPECT_EQ(z, 8);
        }
        saw_zero_not_8 |= z != 8;
      }
      EXPECT_EQ(saw_zero_not_8, type == WeightType::kU4);
      for (float s : w.scales) {
        EXPECT_GE(std::fabs(s), 0x1p-8f);
        EXPECT_LT(std::fabs(s), 0x1p-4f);
        EXPECT_TRUE(ExactIn(s, scale)) << s;
        (s < 0 ? saw_negative : saw_positive) = true;
      }
      EXPECT_TRUE(saw_negative && saw_positive);
      ASSERT_EQ(w.bias.size(), 40u);
      for (float b : w.bias) EXPECT_TRUE(ExactIn(b, DType::kBF16)) << b;
      // Same seed, same weights.
      EXPECT_EQ(RandomWeights(d, 5).u, w.u);
    }
  }
}

TEST(TestLayer, RandomActivationsPadWithNaN) {
  for (DType act : {DType::kF32, DType::kBF16}) {
    LayerDesc d;
    d.n = 8;
    d.k = 10;
    d.act_dtype = act;
    const auto x = RandomActivations(d, 3, 13, 1);
    ASSERT_EQ(x.size(), 3u * 13u * internal::DTypeSize(act));
    for (int64_t i = 0; i < 3; ++i) {
      for (int64_t j = 0; j < 13; ++j) {
        const float v = internal::LoadAsF32(x.data(), act, i * 13 + j);
        EXPECT_EQ(std::isnan(v), j >= 10) << i << ", " << j;
        if (j < 10) {
          EXPECT_LT(std::fabs(v), 8.0f);
        }
      }
    }
  }
}

TEST(TestLayer, RunAndCheckPassesTheRightWeightsAndFailsWrongOnes) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (DType out : {DType::kF32, DType::kBF16}) {
      LayerDesc d;
      d.n = 24;
      d.k = 64;
      d.group_size = 32;
      d.weight_type = WeightType::kU4;
      d.mode = mode;
      d.out_dtype = out;
      const auto w = RandomWeights(d, 3);
      auto layer = MakeLayer(d, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      const auto x = RandomActivations(d, 2, 70, 4);
      EXPECT_TRUE(RunAndCheck(**layer, w, 2, x, 70, 30));

      // One nibble off by one in column 5 is caught and reported.
      auto wrong = w;
      wrong.u[5 * d.k + 7] ^= 1;
      const ::testing::AssertionResult r =
          RunAndCheck(**layer, wrong, 2, x, 70, 30);
      EXPECT_FALSE(r);
      EXPECT_NE(std::string(r.message()).find(", 5]: got"), std::string::npos)
          << r.message();
    }
  }
}

TEST(TestLayer, ToleranceGrowsWithTermsAndBf16Output) {
  LayerDesc d;
  d.out_dtype = DType::kF32;
  EXPECT_DOUBLE_EQ(Tolerance(d, {0.0f, 0.0}), 1e-6);
  EXPECT_DOUBLE_EQ(Tolerance(d, {1.0f, 100.0}), 1e-3 + 1e-6);
  d.out_dtype = DType::kBF16;
  // One bf16 ulp at 1.0 is 2^-7.
  EXPECT_NEAR(Tolerance(d, {1.0f, 0.0}), 1e-6 + 0x1p-7, 1e-12);
}

TEST(TestLayer, F64OracleOnAHandExample) {
  LayerDesc d;
  d.n = 1;
  d.k = 2;
  d.group_size = 1;
  d.weight_type = WeightType::kU4;
  d.act_dtype = DType::kF32;
  d.has_bias = true;
  auto w = RandomWeights(d, 1);
  w.u = {3, 10};
  w.zeros = {1, 12};
  w.scales = {0.5f, 0.25f};
  w.bias = {1.0f};
  const float x[2] = {2.0f, -4.0f};
  // (3 - 1) * 0.5 * 2 + (10 - 12) * 0.25 * -4 + 1 = 2 + 2 + 1.
  EXPECT_EQ(DequantMatmulF64(d, w, 1, x, 2), std::vector<double>{5.0});
}

}  // namespace
}  // namespace w4jit::testing
