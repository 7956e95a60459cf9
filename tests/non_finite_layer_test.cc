// Layer's NonFinitePolicy (w4jit/types.hpp) on every path this CPU runs:
// each W4A16 ISA path with its flavour forced, each DA8W4 tier, and the
// reference. kPropagate (the default) keeps a row of x holding NaN or Inf
// to a non-finite row of y and leaves the other rows bit for bit as
// without it; kError names the first bad element and writes nothing, and
// never reads x's padding; a per-call LayerRunOptions overrides the desc.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/layer.hpp"

namespace w4jit {
namespace {

using internal::IsaTier;
using internal::ScopedIsaCap;
using internal::ScopedW4a16ParamsOverride;
using internal::W4a16Params;

constexpr uint8_t kSentinel = 0xA5;

// A bad element of x and the error kError gives for it.
struct BadValue {
  int64_t row, col;
  float value;
  std::string message;
};

// The bad elements for m rows of K columns: a NaN in the last row, and
// with m >= 3 +Inf at row 1's first column and -Inf at row 0's last.
std::vector<BadValue> BadValues(int64_t m, int64_t k) {
  std::vector<BadValue> bad = {
      {m - 1, 5, std::nanf(""), absl::StrCat("x[", m - 1, ", 5] = nan")}};
  if (m >= 3) {
    bad.push_back({1, 0, INFINITY, "x[1, 0] = inf"});
    bad.push_back(
        {0, k - 1, -INFINITY, absl::StrCat("x[0, ", k - 1, "] = -inf")});
  }
  return bad;
}

// y bytes of m rows of N (out_dtype) filled with kSentinel.
std::vector<uint8_t> SentinelY(const LayerDesc& d, int64_t m) {
  return std::vector<uint8_t>(
      static_cast<size_t>(m * d.n) * internal::DTypeSize(d.out_dtype),
      kSentinel);
}

bool Untouched(const std::vector<uint8_t>& y) {
  for (uint8_t b : y) {
    if (b != kSentinel) return false;
  }
  return true;
}

// Both policies on `desc` (u4 with bias; act dtype varied), M = 1, 3 and
// 40 (the GEMV and GEMM paths), x rows padded with NaN past K.
void CheckPolicies(LayerDesc desc, const LayerOptions& options) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    desc.act_dtype = act;
    desc.non_finite = NonFinitePolicy::kPropagate;
    SCOPED_TRACE(testing::Describe(desc));
    const auto w = testing::RandomWeights(desc, 41);
    auto propagate = testing::MakeLayer(desc, w, options);
    ASSERT_TRUE(propagate.ok()) << propagate.status();
    LayerDesc desc_error = desc;
    desc_error.non_finite = NonFinitePolicy::kError;
    auto error = testing::MakeLayer(desc_error, w, options);
    ASSERT_TRUE(error.ok()) << error.status();
    const int64_t ldx = desc.k + 3;
    for (int64_t m : {1, 3, 40}) {
      SCOPED_TRACE(absl::StrCat("M = ", m));
      const auto x = testing::RandomActivations(desc, m, ldx, 42 + m);
      // Finite x (NaN padding past K): both policies run, the same bits.
      auto y_clean = testing::RunToF32(**propagate, m, x, ldx);
      ASSERT_TRUE(y_clean.ok()) << y_clean.status();
      auto y_checked = testing::RunToF32(**error, m, x, ldx);
      ASSERT_TRUE(y_checked.ok()) << y_checked.status();
      EXPECT_EQ(*y_clean, *y_checked);

      auto x_bad = x;
      std::vector<bool> bad_row(static_cast<size_t>(m), false);
      for (const BadValue& b : BadValues(m, desc.k)) {
        testing::SetActivation(desc, &x_bad, ldx, b.row, b.col, b.value);
        bad_row[b.row] = true;
      }
      // kPropagate: the reference's NaN / Inf pattern, within tolerance
      // elsewhere; bad rows entirely non-finite, the others as without them.
      EXPECT_TRUE(testing::RunAndCheck(**propagate, w, m, x_bad, ldx, desc.n));
      auto y_bad = testing::RunToF32(**propagate, m, x_bad, ldx);
      ASSERT_TRUE(y_bad.ok()) << y_bad.status();
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < desc.n; ++j) {
          const float v = (*y_bad)[i * desc.n + j];
          if (bad_row[i]) {
            ASSERT_FALSE(std::isfinite(v)) << i << ", " << j;
          } else {
            ASSERT_EQ(std::memcmp(&v, &(*y_clean)[i * desc.n + j], 4), 0)
                << i << ", " << j;
          }
        }
      }
      // kError: the first bad element in row order, nothing written.
      const BadValue first = BadValues(m, desc.k).back();
      auto y = SentinelY(desc, m);
      absl::Status s = (*error)->Run(m, x_bad.data(), ldx, y.data(), desc.n);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
      EXPECT_NE(s.message().find(first.message), std::string::npos) << s;
      EXPECT_TRUE(Untouched(y));
      // Per call: error on the propagating layer, propagate on the other.
      LayerRunOptions run_error, run_propagate;
      run_error.non_finite = NonFinitePolicy::kError;
      run_propagate.non_finite = NonFinitePolicy::kPropagate;
      s = (*propagate)
              ->Run(m, x_bad.data(), ldx, y.data(), desc.n, {}, run_error);
      EXPECT_NE(s.message().find(first.message), std::string::npos) << s;
      EXPECT_TRUE(Untouched(y));
      ASSERT_TRUE(
          (*error)
              ->Run(m, x_bad.data(), ldx, y.data(), desc.n, {}, run_propagate)
              .ok());
      auto y_prop = SentinelY(desc, m);
      ASSERT_TRUE(
          (*propagate)->Run(m, x_bad.data(), ldx, y_prop.data(), desc.n).ok());
      EXPECT_EQ(y, y_prop);
    }
  }
}

LayerDesc TestDesc(Mode mode) {
  return testing::KernelTestDesc(mode, 40, 128, 32, WeightType::kU4,
                                 DType::kBF16, DType::kF32, true);
}

class NonFiniteW4a16Path : public ::testing::TestWithParam<testing::IsaPath> {
 protected:
  void SetUp() override {
    const testing::IsaPath path = GetParam();
    if (!testing::StartIsaPathRun(path)) {
      GTEST_SKIP() << testing::WhyCannotRunTier(path.tier);
    }
    cap_ = std::make_unique<ScopedIsaCap>(path.tier);
    params_ =
        std::make_unique<ScopedW4a16ParamsOverride>([path](W4a16Params* p) {
          p->flavor = path.flavor;
          p->vector_bits = path.vector_bits;
        });
  }
  std::unique_ptr<ScopedIsaCap> cap_;
  std::unique_ptr<ScopedW4a16ParamsOverride> params_;
};

TEST_P(NonFiniteW4a16Path, BothPolicies) {
  CheckPolicies(TestDesc(Mode::kW4A16), {});
}

INSTANTIATE_TEST_SUITE_P(Isa, NonFiniteW4a16Path,
                         ::testing::ValuesIn(testing::IsaPaths()),
                         testing::IsaPathName);

class NonFiniteDa8w4 : public ::testing::TestWithParam<IsaTier> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(GetParam())) {
      GTEST_SKIP() << testing::WhyCannotRunTier(GetParam());
    }
    cap_ = std::make_unique<ScopedIsaCap>(GetParam());
  }
  std::unique_ptr<ScopedIsaCap> cap_;
};

TEST_P(NonFiniteDa8w4, BothPolicies) {
  for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
    LayerDesc d = TestDesc(Mode::kDA8W4);
    d.act_quant = aq;
    CheckPolicies(d, {});
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, NonFiniteDa8w4,
                         ::testing::ValuesIn(testing::Da8w4IsaTiers()),
                         testing::IsaTierName);

TEST(NonFiniteReference, BothPoliciesBothModes) {
  LayerOptions options;
  options.force_reference = true;
  CheckPolicies(TestDesc(Mode::kW4A16), options);
  CheckPolicies(TestDesc(Mode::kDA8W4), options);
}

TEST(NonFinitePolicyValue, DefaultsNamesAndBadValues) {
  EXPECT_EQ(LayerDesc{}.non_finite, NonFinitePolicy::kPropagate);
  EXPECT_STREQ(ToString(NonFinitePolicy::kError), "error");
  EXPECT_STREQ(ToString(NonFinitePolicy::kPropagate), "propagate");
  LayerDesc d = TestDesc(Mode::kW4A16);
  const auto w = testing::RandomWeights(d, 3);
  d.non_finite = static_cast<NonFinitePolicy>(7);
  auto bad = testing::MakeLayer(d, w);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("non_finite = 7"), std::string::npos)
      << bad.status();
  d.non_finite = NonFinitePolicy::kPropagate;
  auto layer = testing::MakeLayer(d, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  LayerRunOptions o;
  o.non_finite = static_cast<NonFinitePolicy>(-1);
  const auto x = testing::RandomActivations(d, 1, d.k, 4);
  std::vector<float> y(static_cast<size_t>(d.n));
  const absl::Status s = (*layer)->Run(1, x.data(), d.k, y.data(), d.n, {}, o);
  EXPECT_NE(s.message().find("LayerRunOptions::non_finite = -1"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace w4jit
