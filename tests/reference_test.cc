// The reference against independent oracles: an f64 dequantize-then-matmul
// for W4A16, the exact integer definition of DA8W4 recomputed here, and the
// quantizer's edge cases (zero, huge, denormal, NaN/Inf rows, ties).
#include "runtime/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "base/numeric.h"
#include "gtest/gtest.h"
#include "runtime/threads/parallel.h"
#include "tests/util/test_layer.h"
#include "w4jit/parallel.hpp"

namespace w4jit::internal {
namespace {

using testing::DequantMatmulF64;
using testing::Describe;
using testing::Expected;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::Tolerance;

// A random layer shape: K not a multiple of 64, N not a multiple of 16.
LayerDesc RandomDesc(std::mt19937* rng, int trial) {
  auto pick = [&](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(*rng);
  };
  LayerDesc d;
  const int64_t group_choices[] = {-1, 32, 64, 128};
  d.group_size = group_choices[trial % 4];
  d.k = d.group_size == -1 ? pick(1, 300) : d.group_size * pick(1, 4);
  // Groups of 64 and 128 make K a multiple of 64; the others need not.
  if (d.k % 64 == 0 && d.group_size == -1) d.k += 3;
  if (d.k % 64 == 0 && d.group_size == 32) d.k += 32;
  d.n = pick(1, 70);
  if (d.n % 16 == 0) d.n += 1;
  d.weight_type = pick(0, 1) ? WeightType::kU4 : WeightType::kS4;
  d.act_dtype = pick(0, 1) ? DType::kF32 : DType::kBF16;
  d.out_dtype = pick(0, 1) ? DType::kF32 : DType::kBF16;
  const DType scale_types[] = {DType::kF32, DType::kBF16, DType::kF16};
  d.scale_dtype = scale_types[pick(0, 2)];
  d.has_bias = pick(0, 1);
  d.bias_dtype = pick(0, 1) ? DType::kF32 : DType::kBF16;
  return d;
}

// y = reference(x), widened to f32, m x N.
std::vector<float> RunRef(const LayerDesc& d, const CanonicalWeights& w,
                          int64_t m, const std::vector<uint8_t>& x,
                          int64_t ldx) {
  std::vector<uint8_t> y(static_cast<size_t>(m * d.n) * DTypeSize(d.out_dtype));
  RunReference(d, w, RunArgs{m, x.data(), ldx, y.data(), d.n});
  std::vector<float> out(static_cast<size_t>(m * d.n));
  for (int64_t i = 0; i < m * d.n; ++i) {
    out[i] = LoadAsF32(y.data(), d.out_dtype, i);
  }
  return out;
}

const void* XRow(const LayerDesc& d, const std::vector<uint8_t>& x, int64_t ldx,
                 int64_t i) {
  return x.data() + i * ldx * DTypeSize(d.act_dtype);
}

TEST(ReferenceW4a16, MatchesF64OracleOverRandomShapes) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 48; ++trial) {
    LayerDesc d = RandomDesc(&rng, trial);
    d.mode = Mode::kW4A16;
    if (d.weight_type == WeightType::kU4 && trial % 2 == 1) {
      // Float zero points: w = (u - 8) * s + zf.
      d.zero_point_domain = ZeroPointDomain::kFloat;
      d.zero_point_dtype = trial % 4 == 1 ? DType::kBF16 : DType::kF32;
    }
    SCOPED_TRACE(Describe(d));
    const int64_t m = 1 + trial % 17, ldx = d.k + trial % 3;
    const CanonicalWeights w = RandomWeights(d, trial);
    const auto x = RandomActivations(d, m, ldx, 500 + trial);
    const std::vector<float> y = RunRef(d, w, m, x, ldx);
    const std::vector<double> oracle = DequantMatmulF64(d, w, m, x.data(), ldx);
    int bad = 0;
    for (int64_t i = 0; i < m; ++i) {
      const std::vector<Expected> e =
          testing::ExpectedRow(d, w, XRow(d, x, ldx, i));
      for (int64_t j = 0; j < d.n; ++j) {
        const double tol = Tolerance(d, e[j]);
        const double diff = std::fabs(y[i * d.n + j] - oracle[i * d.n + j]);
        if (diff > tol && ++bad <= 5) {
          ADD_FAILURE() << "y[" << i << ", " << j << "] = " << y[i * d.n + j]
                        << ", f64 " << oracle[i * d.n + j] << ", tolerance "
                        << tol;
        }
      }
    }
  }
}

// qa, acc and y recomputed here from the definition in numerics.md, with
// std::nearbyint (default rounding: half to even) instead of the
// reference's own rounding, and 64-bit integer sums.
TEST(ReferenceDa8w4, MatchesItsExactIntegerDefinition) {
  std::mt19937 rng(77);
  double worst_quant_error = 0.0, sum_quant_error = 0.0;
  int64_t outputs = 0;
  for (int trial = 0; trial < 48; ++trial) {
    LayerDesc d = RandomDesc(&rng, trial);
    d.mode = Mode::kDA8W4;
    d.out_dtype = DType::kF32;
    SCOPED_TRACE(Describe(d));
    const int64_t m = 1 + trial % 17, ldx = d.k + trial % 3;
    const CanonicalWeights w = RandomWeights(d, trial);
    const auto x = RandomActivations(d, m, ldx, 900 + trial);
    const std::vector<float> y = RunRef(d, w, m, x, ldx);
    const std::vector<double> oracle = DequantMatmulF64(d, w, m, x.data(), ldx);
    for (int64_t i = 0; i < m; ++i) {
      float amax = 0.0f;
      for (int64_t k = 0; k < d.k; ++k) {
        amax = std::max(
            amax, std::fabs(LoadAsF32(x.data(), d.act_dtype, i * ldx + k)));
      }
      const float sa = std::max(amax, 1e-10f) / 127.0f;
      std::vector<int> qa(d.k);
      for (int64_t k = 0; k < d.k; ++k) {
        const float v = LoadAsF32(x.data(), d.act_dtype, i * ldx + k) / sa;
        qa[k] = static_cast<int>(
            std::min(127.0f, std::max(-127.0f, std::nearbyint(v))));
      }
      const QuantizedRow row =
          QuantizeRowRef(XRow(d, x, ldx, i), d.act_dtype, d.k, d.group_size);
      ASSERT_EQ(row.scale, sa);
      for (int64_t k = 0; k < d.k; ++k) ASSERT_EQ(row.qa[k], qa[k]) << k;
      for (int64_t g = 0; g < w.groups; ++g) {
        int64_t sum = 0;
        for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
          sum += qa[k];
        }
        ASSERT_EQ(row.group_sums[g], sum) << "g = " << g;
      }
      std::vector<int32_t> acc(w.groups);
      for (int64_t j = 0; j < d.n; ++j) {
        Da8w4GroupAccRef(w, row, j, acc.data());
        double exact = 0.0, magnitude = 0.0, wsum = 0.0;
        for (int64_t g = 0; g < w.groups; ++g) {
          int64_t a = 0;
          for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
            a += int64_t{qa[k]} * (w.U(j, k) - w.Z(j, g));
            wsum += std::fabs((w.U(j, k) - w.Z(j, g)) * double{w.S(j, g)});
          }
          ASSERT_EQ(acc[g], a) << "n = " << j << ", g = " << g;
          exact += double{w.S(j, g)} * a;
          magnitude += std::fabs(double{w.S(j, g)} * a);
        }
        exact *= sa;
        magnitude *= sa;
        if (d.has_bias) {
          exact += w.bias[j];
          magnitude += std::fabs(w.bias[j]);
        }
        const double got = y[i * d.n + j];
        EXPECT_LE(std::fabs(got - exact), 1e-5 * magnitude + 1e-6)
            << "y[" << i << ", " << j << "] = " << got << ", exact " << exact;
        // Quantization error against the unquantized f64 product: each qa
        // is off by at most sa / 2, so |error| <= sa / 2 * sum |w|.
        const double qerr = std::fabs(got - oracle[i * d.n + j]);
        EXPECT_LE(qerr, 0.5 * sa * wsum * (1 + 1e-4) + 1e-5 * magnitude + 1e-6);
        const double rel = qerr / std::max(1e-30, sa * 127.0 * wsum);
        worst_quant_error = std::max(worst_quant_error, rel);
        sum_quant_error += rel;
        ++outputs;
      }
    }
  }
  // Reported, not asserted: quantization error relative to amax * sum |w|.
  ::testing::Test::RecordProperty("da8w4_quant_error_rel_max",
                                  std::to_string(worst_quant_error));
  ::testing::Test::RecordProperty(
      "da8w4_quant_error_rel_mean",
      std::to_string(sum_quant_error / std::max<int64_t>(1, outputs)));
}

// ---------------------------------------------------------------------------
// Quantizer edge cases, on f32 rows.

QuantizedRow Quantize(const std::vector<float>& x, int64_t group_size) {
  return QuantizeRowRef(x.data(), DType::kF32, static_cast<int64_t>(x.size()),
                        group_size);
}

TEST(ReferenceQuantizer, TiesRoundToEven) {
  // amax = 127 makes sa exactly 1, so x / sa is x.
  const std::vector<float> x = {127,   0.5f,  1.5f,        2.5f,
                                -0.5f, -1.5f, -2.5f,       126.5f,
                                -127,  3.5f,  0.49999997f, -126.5f};
  const QuantizedRow r = Quantize(x, -1);
  EXPECT_EQ(r.scale, 1.0f);
  const std::vector<int8_t> want = {127, 0,   2,    2, 0, -2,
                                    -2,  126, -127, 4, 0, -126};
  EXPECT_EQ(r.qa, want);
  ASSERT_EQ(r.group_sums.size(), 1u);
  EXPECT_EQ(r.group_sums[0], 127 + 2 + 2 - 2 - 2 + 126 - 127 + 4 - 126);
}

TEST(ReferenceQuantizer, GroupSumsPerGroup) {
  const std::vector<float> x = {127, 1, 2, 3, -4, -5, 6, -127};
  const QuantizedRow r = Quantize(x, 4);
  EXPECT_EQ(r.group_sums, (std::vector<int32_t>{133, -130}));
}

TEST(ReferenceQuantizer, ZeroAndDenormalRowsQuantizeToZero) {
  for (float v : {0.0f, -0.0f, 1e-40f, -1e-45f}) {
    const std::vector<float> x(16, v);
    const QuantizedRow r = Quantize(x, 8);
    EXPECT_EQ(r.scale, 1e-10f / 127.0f) << v;
    for (int8_t q : r.qa) EXPECT_EQ(q, 0) << v;
    EXPECT_EQ(r.group_sums, (std::vector<int32_t>{0, 0}));
  }
  // A denormal next to a normal value is just small.
  const QuantizedRow r = Quantize({1.0f, 1e-40f, -1.0f, 0.25f}, -1);
  EXPECT_EQ(r.qa, (std::vector<int8_t>{127, 0, -127, 32}));
}

TEST(ReferenceQuantizer, HugeValuesStayFinite) {
  const float big = std::numeric_limits<float>::max();
  const QuantizedRow r = Quantize({1.0f, big, -big, 1e30f}, -1);
  EXPECT_TRUE(std::isfinite(r.scale));
  EXPECT_EQ(r.qa, (std::vector<int8_t>{0, 127, -127, 0}));
}

TEST(ReferenceQuantizer, NonFiniteRowGetsNaNScaleAndZeroQa) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float bad : {nan, inf, -inf}) {
    const QuantizedRow r = Quantize({1.0f, 2.0f, bad, 3.0f}, 2);
    EXPECT_TRUE(std::isnan(r.scale)) << bad;
    EXPECT_EQ(r.qa, (std::vector<int8_t>{0, 0, 0, 0}));
    EXPECT_EQ(r.group_sums, (std::vector<int32_t>{0, 0}));
  }
}

// ---------------------------------------------------------------------------
// Whole rows through RunReference.

LayerDesc EdgeDesc(Mode mode, bool bias) {
  LayerDesc d;
  d.n = 20;
  d.k = 64;
  d.group_size = 32;
  d.weight_type = WeightType::kU4;
  d.act_dtype = DType::kF32;
  d.out_dtype = DType::kF32;
  d.mode = mode;
  d.has_bias = bias;
  return d;
}

TEST(ReferenceRows, ZeroRowGivesExactlyBias) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (bool bias : {false, true}) {
      const LayerDesc d = EdgeDesc(mode, bias);
      const CanonicalWeights w = RandomWeights(d, 3);
      const std::vector<uint8_t> x(d.k * sizeof(float), 0);
      const std::vector<float> y = RunRef(d, w, 1, x, d.k);
      for (int64_t j = 0; j < d.n; ++j) {
        EXPECT_EQ(y[j], bias ? w.bias[j] : 0.0f) << ToString(mode) << j;
      }
    }
  }
}

TEST(ReferenceRows, NonFiniteRowIsNaNAndOtherRowsAreUnaffected) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    const LayerDesc d = EdgeDesc(mode, true);
    const CanonicalWeights w = RandomWeights(d, 4);
    const int64_t m = 3;
    auto x = RandomActivations(d, m, d.k, 5);
    const std::vector<float> clean = RunRef(d, w, m, x, d.k);
    testing::SetActivation(d, &x, d.k, 1, 17,
                           std::numeric_limits<float>::quiet_NaN());
    std::vector<float> y = RunRef(d, w, m, x, d.k);
    for (int64_t j = 0; j < d.n; ++j) {
      EXPECT_EQ(y[j], clean[j]);
      EXPECT_TRUE(std::isnan(y[d.n + j])) << j;
      EXPECT_EQ(y[2 * d.n + j], clean[2 * d.n + j]);
    }
    if (mode == Mode::kDA8W4) {
      testing::SetActivation(d, &x, d.k, 1, 17,
                             -std::numeric_limits<float>::infinity());
      y = RunRef(d, w, m, x, d.k);
      for (int64_t j = 0; j < d.n; ++j) {
        EXPECT_TRUE(std::isnan(y[d.n + j])) << j;
      }
    }
  }
}

TEST(ReferenceRows, BF16OutputIsTheRoundedF32Result) {
  LayerDesc d = EdgeDesc(Mode::kW4A16, true);
  const CanonicalWeights w = RandomWeights(d, 8);
  const auto x = RandomActivations(d, 2, d.k, 9);
  const std::vector<float> f32 = RunRef(d, w, 2, x, d.k);
  d.out_dtype = DType::kBF16;
  const std::vector<float> bf16 = RunRef(d, w, 2, x, d.k);
  for (size_t i = 0; i < f32.size(); ++i) {
    EXPECT_EQ(bf16[i], Bf16ToF32(F32ToBf16(f32[i])));
  }
}

// ---------------------------------------------------------------------------
// The reference as a LinearKernel.

TEST(ReferenceKernel, SameBitsAsRunReferenceForAnyThreadCount) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    LayerDesc d = EdgeDesc(mode, true);
    d.n = 203;
    d.out_dtype = DType::kBF16;
    const CanonicalWeights w = RandomWeights(d, 10);
    const int64_t m = 9, ldy = d.n + 4;
    const auto x = RandomActivations(d, m, d.k, 11);
    std::vector<uint16_t> want(m * ldy, 0xFFFF);
    RunReference(d, w, RunArgs{m, x.data(), d.k, want.data(), ldy});
    const auto kernel = MakeReferenceKernel(d, w);
    for (int threads : {1, 2, 3, 5}) {
      SetNumThreads(threads);
      std::vector<uint16_t> got(m * ldy, 0xFFFF);
      kernel->Run(RunArgs{m, x.data(), d.k, got.data(), ldy});
      EXPECT_EQ(got, want) << threads << " threads";
    }
    SetNumThreads(0);
  }
}

TEST(ReferenceKernel, NamesAndBytes) {
  LayerDesc d = EdgeDesc(Mode::kDA8W4, true);
  const CanonicalWeights w = RandomWeights(d, 1);
  EXPECT_EQ(MakeReferenceKernel(d, w)->kernel_names(),
            std::vector<std::string>{"reference_da8w4"});
  EXPECT_EQ(MakeReferenceKernel(d, w, "group 6 is not a multiple of 4")
                ->kernel_names(),
            std::vector<std::string>{
                "reference_da8w4 (group 6 is not a multiple of 4)"});
  d.mode = Mode::kW4A16;
  const auto k = MakeReferenceKernel(d, w);
  EXPECT_EQ(k->kernel_names(), std::vector<std::string>{"reference_w4a16"});
  EXPECT_EQ(k->packed_bytes(), w.u.size() + w.zeros.size() +
                                   4 * w.scales.size() + 4 * w.bias.size());
}

}  // namespace
}  // namespace w4jit::internal
