// Numerics::kZentorch (docs/numerics-zentorch.md): each dequantized W4A16
// weight rounded to bf16 before the dot products, as zentorch / AOCL
// compute it. The reference, the validation, the kernel key, and every
// W4A16 JIT tier against the reference (bit for bit where the products are
// exact: bf16 x times a bf16 weight).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/numeric.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "jit/w4a16_dequant_generator.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

namespace w4jit {
namespace {

using internal::Bf16ToF32;
using internal::CanonicalWeights;
using internal::F32ToBf16;
using internal::Flavor;
using internal::IsaTier;
using internal::KernelFamily;
using internal::ScopedIsaCap;
using internal::ScopedW4a16ParamsOverride;
using internal::W4a16Params;
using testing::Describe;
using testing::ExpectedRow;
using testing::IsaPath;
using testing::IsaPathName;
using testing::IsaPaths;
using testing::KernelTestDesc;
using testing::MakeLayer;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunAndCheck;
using testing::RunToF32;
using testing::Tolerance;
using testing::WhyCannotRunTier;

LayerDesc ZentorchDesc(int64_t n, int64_t k, int64_t group, WeightType wt,
                       DType act, DType out, bool bias) {
  LayerDesc d = KernelTestDesc(Mode::kW4A16, n, k, group, wt, act, out, bias);
  d.numerics = Numerics::kZentorch;
  return d;
}

float RoundBf16(float v) { return Bf16ToF32(F32ToBf16(v)); }

TEST(ZentorchNumerics, ReferenceRoundsEachDequantizedWeight) {
  // One output, K = 2: y = bf16(q0 * s) * x0 + bf16(q1 * s) * x1.
  LayerDesc d =
      ZentorchDesc(1, 2, -1, WeightType::kS4, DType::kF32, DType::kF32, false);
  d.scale_dtype = DType::kF32;
  CanonicalWeights w = RandomWeights(d, 1);
  const float s = 0.0123456789f;
  w.scales[0] = s;
  w.u[0] = 8 + 7;  // q = 7
  w.u[1] = 8 - 3;  // q = -3
  const float x[2] = {1.0f, 0.5f};
  const float want = RoundBf16(7 * s) * 1.0f + RoundBf16(-3 * s) * 0.5f;
  const float got =
      internal::W4a16OutputRef(w, x, DType::kF32, 0, Numerics::kZentorch);
  EXPECT_EQ(got, want);
  // And the exact numerics do not round (this s is not a bf16 value).
  const float exact =
      internal::W4a16OutputRef(w, x, DType::kF32, 0, Numerics::kExact);
  EXPECT_NE(exact, want);
  EXPECT_EQ(exact, s * (7 * 1.0f + (-3) * 0.5f));
}

TEST(ZentorchNumerics, ValidationAndNames) {
  LayerDesc d = ZentorchDesc(16, 64, 32, WeightType::kS4, DType::kBF16,
                             DType::kBF16, false);
  d.mode = Mode::kDA8W4;
  const CanonicalWeights w =
      RandomWeights(KernelTestDesc(Mode::kDA8W4, 16, 64, 32, WeightType::kS4,
                                   DType::kBF16, DType::kBF16, false),
                    2);
  auto layer = MakeLayer(d, w);
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("numerics = zentorch"),
            std::string::npos)
      << layer.status();
  d.mode = Mode::kW4A16;
  d.numerics = static_cast<Numerics>(7);
  layer = MakeLayer(d, w);
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("numerics = 7"), std::string::npos)
      << layer.status();
  EXPECT_STREQ(ToString(Numerics::kExact), "exact");
  EXPECT_STREQ(ToString(Numerics::kZentorch), "zentorch");

  internal::W4a16DequantConfig key;
  key.isa = IsaTier::kAvx2;
  key.nr = 32;
  key.group_size = 32;
  key.segment = 32;
  internal::W4a16DequantConfig rounded = key;
  rounded.round_weights_bf16 = true;
  EXPECT_NE(key, rounded);
  EXPECT_EQ(key.name().find("_wrbf16"), std::string::npos);
  EXPECT_NE(rounded.name().find("_wrbf16"), std::string::npos)
      << rounded.name();
}

TEST(ZentorchNumerics, EnvironmentSwitch) {
  const char* old = std::getenv("W4JIT_NUMERICS");
  const std::string saved = old != nullptr ? old : "";
  unsetenv("W4JIT_NUMERICS");
  EXPECT_EQ(*NumericsFromEnvironment(), Numerics::kExact);
  setenv("W4JIT_NUMERICS", "zentorch", 1);
  EXPECT_EQ(*NumericsFromEnvironment(), Numerics::kZentorch);
  setenv("W4JIT_NUMERICS", "exact", 1);
  EXPECT_EQ(*NumericsFromEnvironment(), Numerics::kExact);
  setenv("W4JIT_NUMERICS", "aocl", 1);
  absl::StatusOr<Numerics> bad = NumericsFromEnvironment();
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'aocl'"), std::string::npos)
      << bad.status();
  if (old != nullptr) {
    setenv("W4JIT_NUMERICS", saved.c_str(), 1);
  } else {
    unsetenv("W4JIT_NUMERICS");
  }
}

TEST(ZentorchNumerics, CApiCarriesTheField) {
  w4jit_layer_desc c;
  w4jit_layer_desc_init(&c);
  EXPECT_EQ(c.numerics, W4JIT_NUMERICS_EXACT);
  static_assert(static_cast<int>(W4JIT_NUMERICS_ZENTORCH) ==
                static_cast<int>(Numerics::kZentorch));
}

// The AVX-512 dequantizer with the rounding is generated and assembled
// (it runs only where AVX-512 is, in the tier tests below).
TEST(ZentorchNumerics, Avx512DequantizerAssembles) {
  for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
    for (bool fz : {false, true}) {
      if (fz && wt == WeightType::kU4) continue;
      internal::W4a16DequantConfig dq;
      dq.isa = IsaTier::kAvx512Vnni;
      dq.weight_type = wt;
      dq.float_zero = fz;
      dq.group_size = 32;
      dq.nr = 64;
      dq.segment = 32;
      dq.round_weights_bf16 = true;
      SCOPED_TRACE(dq.name());
      ASSERT_TRUE(internal::CheckW4a16DequantConfig(dq).ok());
      internal::W4a16DequantGenerator gen(dq);
      EXPECT_TRUE(gen.Create().ok());
    }
  }
}

// Zentorch numerics run the f32-FMA panel path on every path: the
// AVX512_BF16 one too, whose kernels are then the VNNI tier's.
const char* KernelSuffix(const IsaPath& path) {
  return path.flavor == Flavor::kBf16Dot ? "avx512vnni" : path.suffix;
}

class ZentorchNumericsTiers : public ::testing::TestWithParam<IsaPath> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaPathRun(GetParam())) {
      GTEST_SKIP() << WhyCannotRunTier(GetParam().tier);
    }
  }

  // Checks `desc` (zentorch numerics) at each M: within the tolerance of
  // the reference (RunAndCheck), and bit for bit equal to the reference
  // layer where x is bf16 (every product exact, the sums in k order).
  void Check(const LayerDesc& desc, const std::vector<int64_t>& ms,
             void (*edit)(W4a16Params*) = nullptr) {
    const IsaPath t = GetParam();
    SCOPED_TRACE(Describe(desc));
    ScopedIsaCap cap(t.tier);
    ScopedW4a16ParamsOverride o([t, edit](W4a16Params* p) {
      p->flavor = t.flavor;
      p->vector_bits = t.vector_bits;
      if (edit != nullptr) edit(p);
    });
    const CanonicalWeights w =
        RandomWeights(desc, static_cast<uint32_t>(desc.n * 7 + desc.k));
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    LayerOptions ref_options;
    ref_options.force_reference = true;
    auto ref = MakeLayer(desc, w, ref_options);
    ASSERT_TRUE(ref.ok()) << ref.status();
    const std::vector<std::string> names = (*layer)->kernel_names();
    ASSERT_FALSE(names.empty());
    bool rounds = false;
    for (const std::string& name : names) {
      EXPECT_EQ(name.find("reference"), std::string::npos) << name;
      EXPECT_EQ(name.find("bf16dot"), std::string::npos) << name;
      EXPECT_NE(name.find(std::string("__") + KernelSuffix(t)),
                std::string::npos)
          << name;
      rounds = rounds || name.find("_wrbf16") != std::string::npos;
    }
    EXPECT_TRUE(rounds) << names[0];
    const int64_t ldx = desc.k + 3;
    for (int64_t m : ms) {
      SCOPED_TRACE("M = " + std::to_string(m));
      const auto x = RandomActivations(desc, m, ldx, static_cast<uint32_t>(m));
      EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, desc.n));
      if (desc.act_dtype != DType::kBF16) continue;
      auto got = RunToF32(**layer, m, x, ldx);
      auto want = RunToF32(**ref, m, x, ldx);
      ASSERT_TRUE(got.ok() && want.ok());
      int64_t differ = 0;
      for (size_t i = 0; i < got->size(); ++i) {
        if (std::memcmp(&(*got)[i], &(*want)[i], sizeof(float)) != 0) {
          ++differ;
        }
      }
      EXPECT_EQ(differ, 0) << "of " << got->size() << " outputs";
    }
  }
};

std::vector<int64_t> Ms() { return {1, 2, 3, 5, 8, 17, 64}; }

TEST_P(ZentorchNumericsTiers, SymmetricAndIntegerZeroPoints) {
  for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
    for (int64_t group : {int64_t{32}, int64_t{128}, int64_t{-1}}) {
      for (DType act : {DType::kBF16, DType::kF32}) {
        Check(ZentorchDesc(72, 256, group, wt, act,
                           act == DType::kBF16 ? DType::kF32 : DType::kBF16,
                           group == 32),
              Ms());
      }
    }
  }
}

TEST_P(ZentorchNumericsTiers, ScaleDtypesFloatZeroPointsAndPanels) {
  for (DType scale : {DType::kF32, DType::kF16}) {
    LayerDesc d = ZentorchDesc(64, 128, 64, WeightType::kS4, DType::kBF16,
                               DType::kBF16, true);
    d.scale_dtype = scale;
    Check(d, Ms());
  }
  LayerDesc fz = ZentorchDesc(128, 256, 128, WeightType::kU4, DType::kBF16,
                              DType::kF32, false);
  fz.zero_point_domain = ZeroPointDomain::kFloat;
  fz.zero_point_dtype = DType::kBF16;
  Check(fz, Ms());
  // K blocks shorter than the group, small row blocks.
  Check(ZentorchDesc(96, 256, 128, WeightType::kU4, DType::kBF16, DType::kBF16,
                     true),
        Ms(), [](W4a16Params* p) {
          p->kc = 48;
          p->mc = 6;
        });
}

TEST_P(ZentorchNumericsTiers, DiffersFromExactWhereTheRoundingShows) {
  // The switch must change the results where a weight is not a bf16
  // value: the exact reference's tolerance rejects some outputs.
  LayerDesc d = ZentorchDesc(64, 512, 128, WeightType::kS4, DType::kBF16,
                             DType::kF32, false);
  d.scale_dtype = DType::kF32;
  const IsaPath t = GetParam();
  ScopedIsaCap cap(t.tier);
  ScopedW4a16ParamsOverride o([t](W4a16Params* p) {
    p->flavor = t.flavor;
    p->vector_bits = t.vector_bits;
  });
  const CanonicalWeights w = RandomWeights(d, 11);
  auto layer = MakeLayer(d, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const int64_t m = 4;
  const auto x = RandomActivations(d, m, d.k, 3);
  auto got = RunToF32(**layer, m, x, d.k);
  ASSERT_TRUE(got.ok());
  LayerDesc exact = d;
  exact.numerics = Numerics::kExact;
  int64_t outside = 0;
  for (int64_t i = 0; i < m; ++i) {
    const auto row = ExpectedRow(
        exact, w, x.data() + i * d.k * internal::DTypeSize(d.act_dtype));
    for (int64_t j = 0; j < d.n; ++j) {
      const double err =
          std::fabs(static_cast<double>((*got)[i * d.n + j]) - row[j].value);
      if (err > Tolerance(exact, row[j])) ++outside;
    }
  }
  EXPECT_GT(outside, m * d.n / 4);
}

INSTANTIATE_TEST_SUITE_P(Isa, ZentorchNumericsTiers,
                         ::testing::ValuesIn(IsaPaths()), IsaPathName);

}  // namespace
}  // namespace w4jit
