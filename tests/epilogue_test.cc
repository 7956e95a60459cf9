// Fused epilogues (LayerDesc::epilogue): every activation, the binary
// post-ops and silu_mul, on every path (GEMV M = 1..4, GEMM around the
// hand-over, the panel / decoded-panel path at large M) and mode, against
// the reference with operands at padded leading dimensions, checking that
// nothing past N_out is written; the accuracy of the vector activations
// against a float64 evaluation; AVX-512 epilogue kernels generate and
// assemble (execution needs the CPU); validation of bad epilogues.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "jit/da8w4_gemm_generator.h"
#include "jit/epilogue_emit.h"
#include "jit/generator.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_panel_generator.h"
#include "runtime/epilogue_ref.h"
#include "tests/util/guard_pages.h"
#include "tests/util/isa.h"
#include "tests/util/test_epilogues.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::testing {
namespace {

using internal::DTypeSize;
using internal::IsaTier;
using internal::LoadAsF32;
using internal::TraitsOf;

constexpr Activation kAllActivations[] = {
    Activation::kNone,     Activation::kRelu,    Activation::kSigmoid,
    Activation::kGeluTanh, Activation::kGeluErf, Activation::kSilu};

// float64 evaluation of each activation in a form without cancellation
// (the definitions of docs/epilogues.md, rewritten exactly).
double Sigmoid64(double t) {
  return t >= 0 ? 1.0 / (1.0 + std::exp(-t))
                : std::exp(t) / (1.0 + std::exp(t));
}
double Activation64(Activation a, double t) {
  switch (a) {
    case Activation::kNone:
      return t;
    case Activation::kRelu:
      return t < 0 ? 0.0 : t;
    case Activation::kSigmoid:
      return Sigmoid64(t);
    case Activation::kSilu:
      return t * Sigmoid64(t);
    case Activation::kGeluTanh: {
      const double u = std::sqrt(2.0 / M_PI) * (t + 0.044715 * t * t * t);
      return t * Sigmoid64(2.0 * u);  // t/2 (1 + tanh u)
    }
    case Activation::kGeluErf:
      return t >= 0 ? t * (1.0 - 0.5 * std::erfc(t / std::sqrt(2.0)))
                    : t * 0.5 * std::erfc(-t / std::sqrt(2.0));
    case Activation::kSwigluOai:  // a pair function: SwigluOai64
      return t;
  }
  return t;
}

double BfUlp(double v) {
  if (v == 0.0 || !std::isfinite(v)) return 0.0;
  int e;
  std::frexp(v, &e);
  return std::ldexp(1.0, e - 8);
}

std::vector<uint8_t> RandomOperand(DType t, int64_t m, int64_t ld, int64_t cols,
                                   uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<uint8_t> buf(static_cast<size_t>(m * ld) * DTypeSize(t));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ld; ++j) {
      // Padding is NaN: a kernel reading it poisons its output.
      const float v = j < cols ? dist(rng) : NAN;
      internal::StoreFromF32(buf.data(), t, i * ld + j, v);
    }
  }
  return buf;
}

std::string EpilogueName(const Epilogue& e) {
  std::string s = e.silu_mul
                      ? absl::StrCat(ToString(e.gate_activation()), "_mul")
                      : std::string(ToString(e.activation));
  for (int i = 0; i < e.num_binary; ++i) {
    absl::StrAppend(&s, "+", ToString(e.binary[i].op),
                    ToString(e.binary[i].dtype));
  }
  return s;
}

struct PathCase {
  Mode mode;
  DType act;
  DType out;
};

class EpilogueLayerTest : public ::testing::TestWithParam<PathCase> {};

void RunCases(const PathCase& pc, const std::vector<int64_t>& ms,
              bool force_reference) {
  // N = 2 * 37 + ... : tails in N, and in N / 2 for silu_mul (37 % 8, 100
  // % 8, 100 % 16).
  for (const int64_t n : {74, 200}) {
    for (const Epilogue& e : TestEpilogues()) {
      LayerDesc d = KernelTestDesc(pc.mode, n, 128, 32, WeightType::kS4, pc.act,
                                   pc.out, /*bias=*/true);
      if (n == 200) d.weight_type = WeightType::kU4;
      d.epilogue = e;
      SCOPED_TRACE(absl::StrCat(EpilogueName(e), " ", Describe(d)));
      const auto w = RandomWeights(d, 7);
      LayerOptions opt;
      opt.force_reference = force_reference;
      auto layer = MakeLayer(d, w, opt);
      ASSERT_TRUE(layer.ok()) << layer.status();
      if (!force_reference &&
          internal::TraitsOf(internal::ActiveIsa()).vector_bytes > 0) {
        const std::string name = (*layer)->kernel_names().back();
        ASSERT_EQ(name.find("reference"), std::string::npos) << name;
        EXPECT_NE(
            name.find(internal::EpilogueSuffix(internal::EpilogueCode(e))),
            std::string::npos)
            << name;
      }
      const int64_t n_out = d.out_n();
      for (const int64_t m : ms) {
        const int64_t ldx = d.k + 3, ldy = n_out + 5;
        const auto x = RandomActivations(d, m, ldx, 11 + m);
        // Padded leading dimensions, NaN in the padding.
        const check::EpilogueOperands ops =
            check::RandomEpilogueOperands(d, m, /*pad=*/7, 5);
        const check::CheckResult r =
            check::CheckRun(**layer, w, m, x.data(), ldx, ldy, nullptr, &ops);
        EXPECT_TRUE(r.ok())
            << r.bad << " bad outputs, " << Describe(d) << " m=" << m
            << " kernel=" << (*layer)->kernel_names().back() << "\n"
            << r.report;
      }
    }
  }
}

TEST_P(EpilogueLayerTest, Gemv) {
  if (!CanRunTier(IsaTier::kAvx2))
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
  RunCases(GetParam(), {1, 2, 3, 4}, false);
}

TEST_P(EpilogueLayerTest, AroundHandover) {
  if (!CanRunTier(IsaTier::kAvx2))
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
  RunCases(GetParam(), {7, 8, 9, 12, 15, 16, 17}, false);
}

TEST_P(EpilogueLayerTest, PanelPathLargeM) {
  if (!CanRunTier(IsaTier::kAvx2))
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
  RunCases(GetParam(), {33, 71}, false);
}

TEST_P(EpilogueLayerTest, Reference) { RunCases(GetParam(), {1, 5}, true); }

INSTANTIATE_TEST_SUITE_P(
    Paths, EpilogueLayerTest,
    ::testing::Values(PathCase{Mode::kW4A16, DType::kF32, DType::kF32},
                      PathCase{Mode::kW4A16, DType::kBF16, DType::kBF16},
                      PathCase{Mode::kDA8W4, DType::kBF16, DType::kBF16},
                      PathCase{Mode::kDA8W4, DType::kF32, DType::kF32},
                      PathCase{Mode::kW4A16, DType::kBF16, DType::kF32},
                      PathCase{Mode::kDA8W4, DType::kBF16, DType::kF32}),
    [](const auto& info) {
      return absl::StrCat(ToString(info.param.mode), "_",
                          ToString(info.param.act), "_to_",
                          ToString(info.param.out));
    });

// Numerics::kZentorch's binary post-ops act on the unrounded f32 t and
// round once at the store, y = bf16((t op a) op b), as zentorch's own fused
// kernels compute it (docs/numerics-zentorch.md: checked against
// zentorch 2.14.0.1 on an AVX-512 BF16 CPU). Checked bit for bit against
// the same layer with an f32 output (t) and the post-ops done here in f32,
// on every tier the CPU runs, across the small-M and panel paths. The
// operands nearly cancel t, where a rounding of t before them would show.
class ZentorchBinaryPostOpsTest : public ::testing::TestWithParam<IsaTier> {};

TEST_P(ZentorchBinaryPostOpsTest, ActOnTheUnroundedResult) {
  const IsaTier tier = GetParam();
  if (tier != IsaTier::kRef && !StartIsaRun(tier)) {
    GTEST_SKIP() << WhyCannotRunTier(tier);
  }
  internal::ScopedIsaCap cap(tier);
  for (const BinaryOp op0 : {BinaryOp::kAdd, BinaryOp::kMul}) {
    LayerDesc d = KernelTestDesc(Mode::kW4A16, 72, 256, 64, WeightType::kS4,
                                 DType::kBF16, DType::kBF16, true);
    d.numerics = Numerics::kZentorch;
    LayerDesc plain = d;
    plain.out_dtype = DType::kF32;
    d.epilogue.num_binary = 2;
    d.epilogue.binary[0] = {op0, DType::kBF16};
    d.epilogue.binary[1] = {BinaryOp::kAdd, DType::kF32};
    SCOPED_TRACE(Describe(d));
    const auto w = RandomWeights(d, 17);
    auto layer = MakeLayer(d, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    auto plain_layer = MakeLayer(plain, w);
    ASSERT_TRUE(plain_layer.ok()) << plain_layer.status();
    for (const int64_t m : {1, 3, 9, 40}) {
      SCOPED_TRACE(absl::StrCat("m = ", m));
      const auto x = RandomActivations(d, m, d.k, 5);
      std::vector<float> t(static_cast<size_t>(m * d.n));
      ASSERT_TRUE((*plain_layer)->Run(m, x.data(), d.k, t.data(), d.n).ok());
      // a0 = -t + noise: most of t cancels in the first addition.
      std::vector<uint8_t> a0 = RandomOperand(DType::kBF16, m, d.n, d.n, 6);
      for (int64_t i = 0; i < m * d.n; ++i) {
        const float noise = LoadAsF32(a0.data(), DType::kBF16, i) / 64.0f;
        internal::StoreFromF32(
            a0.data(), DType::kBF16, i,
            op0 == BinaryOp::kAdd ? -t[i] * 1.0009765625f + noise : 1.0f);
      }
      const auto a1 = RandomOperand(DType::kF32, m, d.n, d.n, 7);
      std::vector<uint8_t> y(static_cast<size_t>(m * d.n) * 2);
      EpilogueInputs in;
      in.data[0] = a0.data();
      in.ld[0] = d.n;
      in.data[1] = a1.data();
      in.ld[1] = d.n;
      ASSERT_TRUE((*layer)->Run(m, x.data(), d.k, y.data(), d.n, in).ok());
      int64_t differ = 0;
      for (int64_t i = 0; i < m * d.n; ++i) {
        const float v0 = LoadAsF32(a0.data(), DType::kBF16, i);
        float v = op0 == BinaryOp::kAdd ? t[i] + v0 : t[i] * v0;
        v += LoadAsF32(a1.data(), DType::kF32, i);
        const uint16_t want = internal::F32ToBf16(v);
        uint16_t got;
        std::memcpy(&got, y.data() + 2 * i, 2);
        if (got != want) ++differ;
      }
      EXPECT_EQ(differ, 0) << "of " << m * d.n;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, ZentorchBinaryPostOpsTest,
                         ::testing::ValuesIn(testing::IsaTiersWithRef()),
                         testing::IsaTierName);

// An in-place residual add: the operand is y itself.
TEST(EpilogueTest, OperandMayBeY) {
  for (const Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    LayerDesc d = KernelTestDesc(mode, 40, 64, 32, WeightType::kS4,
                                 DType::kBF16, DType::kBF16, false);
    d.epilogue.num_binary = 1;
    d.epilogue.binary[0] = {BinaryOp::kAdd, DType::kBF16};
    const auto w = RandomWeights(d, 3);
    auto layer = MakeLayer(d, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    LayerDesc plain = d;
    plain.epilogue = Epilogue{};
    auto plain_layer = MakeLayer(plain, w);
    ASSERT_TRUE(plain_layer.ok());
    for (const int64_t m : {1, 3, 40}) {
      const auto x = RandomActivations(d, m, d.k, 9);
      const auto resid = RandomOperand(DType::kBF16, m, d.n, d.n, 4);
      std::vector<uint8_t> y = resid;
      EpilogueInputs in;
      in.data[0] = y.data();
      in.ld[0] = d.n;
      ASSERT_TRUE((*layer)->Run(m, x.data(), d.k, y.data(), d.n, in).ok());
      std::vector<uint8_t> t(static_cast<size_t>(m * d.n) * 2);
      ASSERT_TRUE((*plain_layer)->Run(m, x.data(), d.k, t.data(), d.n).ok());
      for (int64_t i = 0; i < m * d.n; ++i) {
        const double ti = LoadAsF32(t.data(), DType::kBF16, i);
        const double want = ti + LoadAsF32(resid.data(), DType::kBF16, i);
        const double got = LoadAsF32(y.data(), DType::kBF16, i);
        // t was rounded to bf16 once more than the fused result (half an
        // ulp of |t|, which can exceed |y| when t and the residual cancel).
        EXPECT_NEAR(got, want,
                    BfUlp(std::fabs(ti)) + 2 * BfUlp(std::fabs(want)) + 1e-4)
            << ToString(mode) << " m=" << m << " i=" << i;
      }
    }
  }
}

// Operands and y flush against PROT_NONE pages at either end (ld = N_out,
// so the last row's last element is the buffer's last): the kernels'
// partial loads and stores never touch a byte past N_out, on every path.
TEST(EpilogueTest, OperandsAndYFlushAgainstGuardPages) {
  if (!CanRunTier(IsaTier::kAvx2))
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
  for (const Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (const bool silu_mul : {false, true}) {
      LayerDesc d = KernelTestDesc(mode, 2 * 37, 64, 32, WeightType::kS4,
                                   DType::kBF16, DType::kBF16, true);
      d.epilogue.silu_mul = silu_mul;
      d.epilogue.activation =
          silu_mul ? Activation::kNone : Activation::kGeluErf;
      d.epilogue.num_binary = 2;
      d.epilogue.binary[0] = {BinaryOp::kMul, DType::kBF16};
      d.epilogue.binary[1] = {BinaryOp::kAdd, DType::kF32};
      const auto w = RandomWeights(d, 5);
      auto layer = MakeLayer(d, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      const int64_t n_out = d.out_n();
      for (const int64_t m : {1, 3, 17, 40}) {
        for (const Flush flush : {Flush::kFront, Flush::kBack}) {
          const auto x = RandomActivations(d, m, d.k, 2);
          GuardedBuffer y(static_cast<size_t>(m * n_out) * 2, flush);
          GuardedBuffer a0(static_cast<size_t>(m * n_out) * 2, flush);
          GuardedBuffer a1(static_cast<size_t>(m * n_out) * 4, flush);
          std::memset(a0.data(), 0, a0.bytes());
          std::memset(a1.data(), 0, a1.bytes());
          EpilogueInputs in;
          in.data[0] = a0.data();
          in.data[1] = a1.data();
          in.ld[0] = in.ld[1] = n_out;
          EXPECT_TRUE((*layer)->Run(m, x.data(), d.k, y.data(), n_out, in).ok())
              << ToString(mode) << " m=" << m;
        }
      }
    }
  }
}

// NaN rows (DA8W4: a non-finite x) stay NaN through every activation.
TEST(EpilogueTest, NanRowStaysNan) {
  if (!CanRunTier(IsaTier::kAvx2))
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
  for (Activation a : kAllActivations) {
    LayerDesc d = KernelTestDesc(Mode::kDA8W4, 48, 64, 32, WeightType::kS4,
                                 DType::kF32, DType::kF32, false);
    d.epilogue.activation = a;
    const auto w = RandomWeights(d, 3);
    auto layer = MakeLayer(d, w);
    ASSERT_TRUE(layer.ok());
    auto x = RandomActivations(d, 2, d.k, 1);
    SetActivation(d, &x, d.k, 1, 5, NAN);
    std::vector<float> y(2 * 48);
    ASSERT_TRUE((*layer)->Run(2, x.data(), d.k, y.data(), 48).ok());
    for (int j = 0; j < 48; ++j) {
      EXPECT_FALSE(std::isnan(y[j])) << ToString(a) << " " << j;
      EXPECT_TRUE(std::isnan(y[48 + j])) << ToString(a) << " " << j;
    }
  }
}

// A kernel that applies one activation to n floats (n a multiple of the
// lanes): the vector code of jit/epilogue_emit.h on its own.
class ActivationKernel : public internal::Generator {
 public:
  struct Args {
    const float* in;
    float* out;
    int64_t vectors;
  };
  ActivationKernel(Activation a, bool avx512)
      : Generator(absl::StrCat("activation_", ToString(a))),
        a_(a),
        vec_(this, avx512 ? IsaTier::kAvx512Vnni : IsaTier::kAvx2) {}

 protected:
  void Generate() override {
    Preamble();
    mov(rsi, ptr[rdi + offsetof(Args, in)]);
    mov(rdx, ptr[rdi + offsetof(Args, out)]);
    mov(rcx, ptr[rdi + offsetof(Args, vectors)]);
    const internal::EpilogueEmitter ep(this, vec_, &pool_, Epilogue{});
    Xbyak::Label loop;
    L(loop);
    vmovups(vec_.Vec(0), ptr[rsi]);
    ep.EmitActivation(a_, vec_.Vec(0),
                      {vec_.Vec(1), vec_.Vec(2), vec_.Vec(3), vec_.Vec(4)});
    vmovups(ptr[rdx], vec_.Vec(0));
    add(rsi, vec_.bytes());
    add(rdx, vec_.bytes());
    dec(rcx);
    jnz(loop, T_NEAR);
    Postamble();
    pool_.Emit(this);
  }

 private:
  Activation a_;
  internal::VecEmitter vec_;
  internal::ConstPool pool_;
};

// Inputs: every 61st f32 bit pattern with |x| in [2^-20, 20] (both signs),
// then a coarse sweep to +-100 and the edge cases.
std::vector<float> ProbeInputs() {
  std::vector<float> xs;
  uint32_t lo, hi;
  float flo = std::ldexp(1.0f, -20), fhi = 20.0f;
  std::memcpy(&lo, &flo, 4);
  std::memcpy(&hi, &fhi, 4);
  for (uint32_t b = lo; b <= hi; b += 61) {
    float v;
    std::memcpy(&v, &b, 4);
    xs.push_back(v);
    xs.push_back(-v);
  }
  for (float v = -100.0f; v <= 100.0f; v += 0.01f) xs.push_back(v);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 1e20f, -1e20f}) {
    xs.push_back(v);
  }
  while (xs.size() % 16 != 0) xs.push_back(0.0f);
  return xs;
}

// Relative errors are measured where |f64 result| >= kRelFloor; below it
// (where the vector forms flush exp(t) < 2^-126 to 0) the absolute error
// is bounded by kRelFloor.
constexpr double kRelFloor = 1e-30;

struct ErrorStats {
  double max_rel = 0;  // over outputs with |f64| >= kRelFloor
  double at = 0;
  double max_abs_tiny = 0;  // over the others
  double max_rel_core = 0;  // over |t| <= 8 (where LLM activations live)
};

// The bounds docs/epilogues.md states (measured maxima, rounded up).
double JitBound(Activation a) {
  switch (a) {
    case Activation::kGeluTanh:
      return 1.5e-5;  // the f32 argument's rounding times |2u| (tail)
    case Activation::kGeluErf:
      return 6e-7;
    default:
      return 3e-7;
  }
}
double RefBound(Activation a) {
  switch (a) {
    case Activation::kGeluTanh:
    case Activation::kGeluErf:
      return 1.5e-5;  // erfcf / expf of a rounded f32 argument (tail)
    default:
      return 3e-7;
  }
}

template <class F>
ErrorStats Measure(Activation a, const std::vector<float>& xs, F f32_of) {
  ErrorStats s;
  for (size_t i = 0; i < xs.size(); ++i) {
    const double want = Activation64(a, xs[i]);
    const double got = f32_of(i);
    if (std::fabs(want) >= kRelFloor) {
      const double rel = std::fabs(got - want) / std::fabs(want);
      if (std::fabs(xs[i]) <= 8) s.max_rel_core = std::max(s.max_rel_core, rel);
      if (rel > s.max_rel) {
        s.max_rel = rel;
        s.at = xs[i];
      }
    } else {
      s.max_abs_tiny = std::max(s.max_abs_tiny, std::fabs(got - want));
    }
  }
  return s;
}

TEST(EpilogueAccuracyTest, VectorActivationsAgainstFloat64) {
  if (!CanRunTier(IsaTier::kAvx2))
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
  const std::vector<float> xs = ProbeInputs();
  for (Activation a : kAllActivations) {
    ActivationKernel k(a, false);
    ASSERT_TRUE(k.Create().ok());
    std::vector<float> out(xs.size());
    ActivationKernel::Args args{xs.data(), out.data(),
                                static_cast<int64_t>(xs.size() / 8)};
    k.entry<void (*)(const ActivationKernel::Args*)>()(&args);
    const ErrorStats jit = Measure(a, xs, [&](size_t i) { return out[i]; });
    const ErrorStats ref = Measure(
        a, xs, [&](size_t i) { return internal::ActivationRef(a, xs[i]); });
    std::printf(
        "%-9s avx2: max rel %.3g (at %.7g; %.3g for |t| <= 8), abs below "
        "1e-30 %.3g | reference f32: max rel %.3g (at %.7g; %.3g for |t| <= "
        "8)\n",
        ToString(a), jit.max_rel, jit.at, jit.max_rel_core, jit.max_abs_tiny,
        ref.max_rel, ref.at, ref.max_rel_core);
    EXPECT_LE(jit.max_rel, JitBound(a)) << ToString(a) << " at " << jit.at;
    EXPECT_LE(jit.max_abs_tiny, kRelFloor) << ToString(a);
    EXPECT_LE(ref.max_rel, RefBound(a)) << ToString(a) << " at " << ref.at;
    // NaN in, NaN out.
    std::vector<float> nan_in(8, NAN), nan_out(8);
    ActivationKernel::Args nargs{nan_in.data(), nan_out.data(), 1};
    k.entry<void (*)(const ActivationKernel::Args*)>()(&nargs);
    for (float v : nan_out) EXPECT_TRUE(std::isnan(v)) << ToString(a);
  }
}

TEST(EpilogueAccuracyTest, Avx512ActivationsAssembleAndRunWhereSupported) {
  for (Activation a : kAllActivations) {
    ActivationKernel k(a, true);
    ASSERT_TRUE(k.Create().ok()) << ToString(a);
  }
  if (!CanRunTier(IsaTier::kAvx512Vnni)) {
    GTEST_SKIP() << "AVX-512 activations generated and assembled; not run: "
                 << WhyCannotRunTier(IsaTier::kAvx512Vnni);
  }
  const std::vector<float> xs = ProbeInputs();
  for (Activation a : kAllActivations) {
    ActivationKernel k(a, true);
    ASSERT_TRUE(k.Create().ok());
    std::vector<float> out(xs.size());
    ActivationKernel::Args args{xs.data(), out.data(),
                                static_cast<int64_t>(xs.size() / 16)};
    k.entry<void (*)(const ActivationKernel::Args*)>()(&args);
    const ErrorStats s = Measure(a, xs, [&](size_t i) { return out[i]; });
    EXPECT_LE(s.max_rel, JitBound(a)) << ToString(a) << " at " << s.at;
  }
}

// A kernel that applies a gated pair epilogue (silu_mul with some gate)
// to n gate and n up values: EpilogueEmitter::Apply on its own.
class PairKernel : public internal::Generator {
 public:
  struct Args {
    const float* gate;
    const float* up;
    float* out;
    int64_t vectors;
  };
  PairKernel(const Epilogue& e, bool avx512)
      : Generator("pair_epilogue"),
        e_(e),
        vec_(this, avx512 ? IsaTier::kAvx512Vnni : IsaTier::kAvx2) {}

 protected:
  void Generate() override {
    Preamble();
    mov(rsi, ptr[rdi + offsetof(Args, gate)]);
    mov(r8, ptr[rdi + offsetof(Args, up)]);
    mov(rdx, ptr[rdi + offsetof(Args, out)]);
    mov(rcx, ptr[rdi + offsetof(Args, vectors)]);
    const internal::EpilogueEmitter ep(this, vec_, &pool_, e_);
    const Xbyak::Xmm up = vec_.Vec(1);
    Xbyak::Label loop;
    L(loop);
    vmovups(vec_.Vec(0), ptr[rsi]);
    vmovups(up, ptr[r8]);
    ep.Apply(vec_.Vec(0), &up, nullptr, 0, vec_.lanes32(),
             {vec_.Vec(2), vec_.Vec(3), vec_.Vec(4), vec_.Vec(5)});
    vmovups(ptr[rdx], vec_.Vec(0));
    add(rsi, vec_.bytes());
    add(r8, vec_.bytes());
    add(rdx, vec_.bytes());
    dec(rcx);
    jnz(loop, T_NEAR);
    Postamble();
    pool_.Emit(this);
  }

 private:
  Epilogue e_;
  internal::VecEmitter vec_;
  internal::ConstPool pool_;
};

// swigluoai in float64: min(g, limit) sigmoid(alpha min(g, limit))
// (clamp(u, -limit, limit) + 1).
double SwigluOai64(double g, double u, double alpha, double limit) {
  g = std::min(g, limit);
  u = std::clamp(u, -limit, limit);
  return g * Sigmoid64(alpha * g) * (u + 1.0);
}

// The swigluoai pair (gpt-oss's constants and others) against float64 on
// a grid of gate and up values around and past the limits, NaN kept; the
// AVX-512 form is generated and assembled everywhere and run where the
// CPU has it.
TEST(EpilogueAccuracyTest, SwigluOaiPairAgainstFloat64) {
  std::vector<float> gs, us;
  for (float g = -100.0f; g <= 100.0f; g += 0.37f) {
    for (float u : {-1e4f, -30.0f, -7.5f, -7.0f, -3.25f, -1.0f, -0.0f, 0.5f,
                    6.99f, 7.0f, 8.0f, 1e4f}) {
      gs.push_back(g);
      us.push_back(u);
    }
  }
  for (float v : {7.0f, 6.9999995f, 7.0000005f, 1e20f, -1e20f, 0.0f}) {
    gs.push_back(v);
    us.push_back(v);
  }
  gs.push_back(NAN);
  us.push_back(1.0f);
  gs.push_back(1.0f);
  us.push_back(NAN);
  while (gs.size() % 16 != 0) {
    gs.push_back(1.0f);
    us.push_back(1.0f);
  }
  for (const auto& [alpha, limit] :
       {std::pair{1.702f, 7.0f}, {0.5f, 2.5f}, {-1.25f, 30.0f}}) {
    Epilogue e;
    e.silu_mul = true;
    e.activation = Activation::kSwigluOai;
    e.gate_alpha = alpha;
    e.gate_limit = limit;
    for (const bool avx512 : {false, true}) {
      SCOPED_TRACE(absl::StrCat("alpha ", alpha, " limit ", limit,
                                avx512 ? " avx512" : " avx2"));
      PairKernel k(e, avx512);
      ASSERT_TRUE(k.Create().ok());
      const IsaTier tier = avx512 ? IsaTier::kAvx512Vnni : IsaTier::kAvx2;
      if (!CanRunTier(tier)) continue;  // assembled only
      std::vector<float> out(gs.size());
      PairKernel::Args args{
          gs.data(), us.data(), out.data(),
          static_cast<int64_t>(gs.size()) / TraitsOf(tier).lanes32()};
      k.entry<void (*)(const PairKernel::Args*)>()(&args);
      double worst = 0.0;
      for (size_t i = 0; i < gs.size(); ++i) {
        const float ref = internal::SwigluOaiRef(gs[i], us[i], alpha, limit);
        if (std::isnan(gs[i]) || std::isnan(us[i])) {
          EXPECT_TRUE(std::isnan(out[i])) << i;
          EXPECT_TRUE(std::isnan(ref)) << i;
          continue;
        }
        const double want = SwigluOai64(gs[i], us[i], alpha, limit);
        // Relative to f64 where it is not tiny; the f32 product alpha * g
        // is rounded first (half an ulp of |alpha g| <= 88 moves sigmoid
        // by that times 1 - sigmoid): 6e-8 |alpha g| relative, plus the
        // vector sigmoid's 3e-7 and the two products'.
        const double z = std::fabs(alpha * std::min(gs[i], limit));
        const double bound = 3e-7 + 6e-8 * z + 2.5e-7;
        const double scale = std::max(std::fabs(want), 1e-30);
        const double rel = std::fabs(out[i] - want) / scale;
        const double rel_ref = std::fabs(ref - want) / scale;
        worst = std::max(worst, rel);
        EXPECT_LE(rel, bound) << "g " << gs[i] << " u " << us[i] << " got "
                              << out[i] << " want " << want;
        EXPECT_LE(rel_ref, bound) << "reference, g " << gs[i] << " u " << us[i];
      }
      std::printf("swigluoai alpha %g limit %g %s: max rel %.3g\n", alpha,
                  limit, avx512 ? "avx512" : "avx2", worst);
    }
  }
}

// Every AVX-512 epilogue kernel variant generates: DA8W4 (packed and
// decoded tiles, tails), W4A16 GEMV (f32 FMA and bf16 dot) and panel.
TEST(EpilogueAvx512Test, KernelsGenerate) {
  std::vector<Epilogue> eps = TestEpilogues();
  Epilogue none;
  eps.push_back(none);
  for (const Epilogue& e : eps) {
    SCOPED_TRACE(EpilogueName(e));
    for (const bool decoded : {false, true}) {
      internal::Da8w4GemmConfig c;
      c.isa = IsaTier::kAvx512Vnni;
      c.out_dtype = DType::kBF16;
      c.layout.lanes = 16;
      c.layout.k = 256;
      c.layout.group_size = 64;
      c.layout.n = e.silu_mul ? 4 * 32 : 100;
      c.epilogue = e;
      c.out_n = e.silu_mul ? 4 * 16 - 5 : 0;
      c.bias = true;
      c.mr = 4;
      c.nblk = decoded ? 1 : 2;
      c.decoded = decoded;
      c.n_tail = true;
      ASSERT_TRUE(internal::CheckDa8w4GemmConfig(c).ok())
          << internal::CheckDa8w4GemmConfig(c);
      internal::Da8w4GemmGenerator g(c);
      ASSERT_TRUE(g.Create().ok());
      EXPECT_TRUE(KernelNameIs(g.name(), "", "avx512vnni"));
    }
    for (const bool dot : {false, true}) {
      internal::W4a16GemvConfig c;
      c.isa = dot ? IsaTier::kAvx512Bf16 : IsaTier::kAvx512Vnni;
      c.flavor = dot ? internal::Flavor::kBf16Dot : internal::Flavor::kF32Fma;
      c.out_dtype = DType::kF32;
      // The dot flavour decodes s4 (u4 layers fold their zero points).
      c.weight_type = dot ? WeightType::kS4 : WeightType::kU4;
      c.group_size = 64;
      c.k = 256;
      c.nr = 64;
      c.n = e.silu_mul ? 160 : 150;
      c.out_n = e.silu_mul ? 75 : 0;
      c.mr = 4;
      c.bias = true;
      c.epilogue = e;
      ASSERT_TRUE(internal::CheckW4a16GemvConfig(c).ok())
          << internal::CheckW4a16GemvConfig(c);
      internal::W4a16GemvGenerator g(c);
      ASSERT_TRUE(g.Create().ok());
      // The tall tile of batched decode: 12 rows x 2 vectors.
      c.mr = 12;
      c.tile_vectors = 2;
      ASSERT_TRUE(internal::CheckW4a16GemvConfig(c).ok())
          << internal::CheckW4a16GemvConfig(c);
      internal::W4a16GemvGenerator tall(c);
      const absl::Status made = tall.Create();
      ASSERT_TRUE(made.ok()) << made << " " << tall.name();
    }
    internal::W4a16PanelConfig p;
    p.isa = IsaTier::kAvx512Vnni;
    p.out_dtype = DType::kBF16;
    p.mr = 6;
    p.nr = 64;
    p.stride = 64;
    p.n = 64;
    p.out_n = e.silu_mul ? 27 : 0;
    p.bias = true;
    p.epilogue = e;
    ASSERT_TRUE(internal::CheckW4a16PanelConfig(p).ok())
        << internal::CheckW4a16PanelConfig(p);
    internal::W4a16PanelGenerator g(p);
    ASSERT_TRUE(g.Create().ok());
  }
}

TEST(EpilogueValidationTest, BadEpiloguesAreNamed) {
  LayerDesc d = KernelTestDesc(Mode::kW4A16, 33, 64, 32, WeightType::kS4,
                               DType::kBF16, DType::kBF16, false);
  const auto w = RandomWeights(d, 1);
  auto expect_error = [&](const LayerDesc& bad, const std::string& needle) {
    auto l = MakeLayer(bad, w);
    ASSERT_FALSE(l.ok()) << needle;
    EXPECT_NE(l.status().message().find(needle), std::string::npos)
        << l.status();
  };
  LayerDesc odd = d;
  odd.epilogue.silu_mul = true;
  expect_error(odd, "N = 33");
  LayerDesc both = d;
  both.n = 32;
  both.epilogue.silu_mul = true;
  both.epilogue.activation = Activation::kRelu;
  expect_error(both, "activation = relu is none of them");
  LayerDesc act = d;
  act.epilogue.activation = static_cast<Activation>(9);
  expect_error(act, "activation = 9");
  LayerDesc nb = d;
  nb.epilogue.num_binary = 3;
  expect_error(nb, "num_binary = 3");
  LayerDesc dt = d;
  dt.epilogue.num_binary = 1;
  dt.epilogue.binary[0].dtype = DType::kF16;
  expect_error(dt, "binary[0].dtype = f16");

  // Run-time operands.
  LayerDesc good = d;
  good.epilogue.num_binary = 2;
  auto layer = MakeLayer(good, w);
  ASSERT_TRUE(layer.ok());
  std::vector<uint8_t> x(64 * 2), y(33 * 2), a(40 * 2);
  absl::Status s = (*layer)->Run(1, x.data(), 64, y.data(), 33);
  EXPECT_NE(s.message().find("EpilogueInputs"), std::string::npos) << s;
  EpilogueInputs in;
  in.data[0] = a.data();
  in.ld[0] = 33;
  in.ld[1] = 33;
  s = (*layer)->Run(1, x.data(), 64, y.data(), 33, in);
  EXPECT_NE(s.message().find("operand 1 (add) is null"), std::string::npos)
      << s;
  in.data[1] = a.data();
  in.ld[1] = 32;
  s = (*layer)->Run(1, x.data(), 64, y.data(), 33, in);
  EXPECT_NE(s.message().find("ld = 32 is smaller than the output width 33"),
            std::string::npos)
      << s;
  // silu_mul: ldy against N / 2.
  LayerDesc sm = d;
  sm.n = 32;
  sm.epilogue.silu_mul = true;
  const auto w2 = RandomWeights(sm, 1);
  auto l2 = MakeLayer(sm, w2);
  ASSERT_TRUE(l2.ok());
  s = (*l2)->Run(1, x.data(), 64, y.data(), 15);
  EXPECT_NE(s.message().find("ldy = 15 is smaller than N / 2 = 16"),
            std::string::npos)
      << s;
  EXPECT_TRUE((*l2)->Run(1, x.data(), 64, y.data(), 16).ok());
}

TEST(EpilogueCApiTest, MirrorsTheCppApi) {
  w4jit_layer_desc d;
  w4jit_layer_desc_init(&d);
  EXPECT_EQ(d.epilogue.activation, W4JIT_ACT_NONE);
  EXPECT_EQ(d.epilogue.num_binary, 0);
  d.n = 32;
  d.k = 64;
  d.epilogue.silu_mul = 1;
  d.epilogue.num_binary = 1;
  d.epilogue.binary_op[0] = W4JIT_BINARY_ADD;
  d.epilogue.binary_dtype[0] = W4JIT_BF16;
  std::vector<int8_t> q(32 * 64, 1);
  std::vector<float> sc(32, 0.01f);
  w4jit_weights wt;
  std::memset(&wt, 0, sizeof wt);
  wt.format = W4JIT_FORMAT_UNPACKED_INT8;
  wt.qweight = q.data();
  wt.scales = sc.data();
  wt.groups_major = 1;
  w4jit_layer* layer = nullptr;
  ASSERT_EQ(w4jit_layer_create(&d, &wt, &layer), W4JIT_OK)
      << w4jit_last_error();
  std::vector<uint16_t> x(64, 0x3F80), y(16), a(16, 0);
  EXPECT_EQ(w4jit_layer_run(layer, 1, x.data(), 64, y.data(), 16),
            W4JIT_INVALID_ARGUMENT);
  EXPECT_EQ(w4jit_layer_run_epilogue(layer, 1, x.data(), 64, y.data(), 16,
                                     a.data(), 16, nullptr, 0),
            W4JIT_OK)
      << w4jit_last_error();
  // t = 64 * 0.01 = 0.64 for gate and up: y = silu(0.64) * 0.64.
  const double t = 0.64;
  const double want = t / (1 + std::exp(-t)) * t;
  for (uint16_t v : y) {
    EXPECT_NEAR(internal::Bf16ToF32(v), want, 0.01);
  }
  EXPECT_EQ(w4jit_layer_run_epilogue(layer, 1, x.data(), 64, y.data(), 16,
                                     a.data(), 15, nullptr, 0),
            W4JIT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(w4jit_last_error()).find("ld = 15"), std::string::npos);
  w4jit_layer_destroy(layer);
}

}  // namespace
}  // namespace w4jit::testing
