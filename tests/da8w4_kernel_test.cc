// The DA8W4 JIT path through the public API: every M / N / K tail, group
// size, weight type, dtype, bias and stride against the reference (the
// tolerances of numerics.md), the integer part exactly, bit-identical
// results for any thread count and tile shape (both activation-scale
// choices; the rest of per-group in da8w4_act_quant_test.cc), and the
// reference (with its reason) for shapes the JIT path refuses. Every case runs
// per ISA (capped with ScopedIsaCap); AVX-512 execution skips on CPUs without
// it, but its kernels are generated (and so checked) everywhere.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "jit/da8w4_gemm_plan.h"
#include "runtime/da8w4/da8w4_decode.h"
#include "runtime/da8w4/da8w4_kernel_lookup.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/jit_kernels.h"
#include "runtime/reference.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/parallel.hpp"

namespace w4jit {
namespace {

using internal::CanonicalWeights;
using internal::IsaTier;
using testing::Describe;
using testing::MakeLayer;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunAndCheck;
using testing::RunToF32;

LayerDesc Desc(int64_t n, int64_t k, int64_t group, WeightType type, DType act,
               DType out, bool bias) {
  return testing::KernelTestDesc(Mode::kDA8W4, n, k, group, type, act, out,
                                 bias);
}

bool HasJitKernel(const Layer& layer) {
  const std::vector<std::string> names = layer.kernel_names();
  if (names.size() < 2 || names[0].rfind("quant_", 0) != 0) return false;
  for (const std::string& n : names) {
    if (n.rfind("da8w4_", 0) == 0) return true;
  }
  return false;
}

std::string NamesOf(const Layer& layer) {
  std::string s;
  for (const std::string& n : layer.kernel_names()) s += n + " ";
  return s;
}

// Restores the default thread count when a test changed it.
class ThreadsGuard {
 public:
  ~ThreadsGuard() { SetNumThreads(0); }
};

class Da8w4Test : public ::testing::TestWithParam<IsaTier> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(GetParam())) {
      GTEST_SKIP() << testing::WhyCannotRunTier(GetParam())
                   << ": its DA8W4 kernels are generated (see "
                      "Da8w4Generation) but cannot run here";
    }
    cap_ = std::make_unique<internal::ScopedIsaCap>(GetParam());
  }

  // Builds the layer (asserting it got the JIT path) and checks m rows.
  void Check(const LayerDesc& desc, int64_t m, int64_t ldx, int64_t ldy,
             uint32_t seed) {
    SCOPED_TRACE(Describe(desc) + absl::StrCat(" m=", m));
    const CanonicalWeights w = RandomWeights(desc, seed);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    ASSERT_TRUE(HasJitKernel(**layer)) << NamesOf(**layer);
    const auto x = RandomActivations(desc, m, ldx, seed + 1);
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy));
  }

 private:
  std::unique_ptr<internal::ScopedIsaCap> cap_;
};

TEST_P(Da8w4Test, EveryMTail) {
  // N = 40 leaves a partial column block at both widths.
  const LayerDesc desc =
      Desc(40, 256, 64, WeightType::kS4, DType::kBF16, DType::kBF16, true);
  const CanonicalWeights w = RandomWeights(desc, 3);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_TRUE(HasJitKernel(**layer)) << NamesOf(**layer);
  // Around the hand-over (16), the decoded-panel threshold (32) and the
  // tile heights (6 rows; 14 on AVX-512 panels).
  for (int64_t m :
       {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18,
        23, 28, 29, 30, 31, 32, 33, 35, 36, 41, 42, 43, 47, 48, 49, 64, 255}) {
    const auto x = RandomActivations(desc, m, desc.k, 100 + m);
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n)) << "m=" << m;
  }
}

TEST_P(Da8w4Test, GroupsTailsTypesAndStrides) {
  struct Case {
    int64_t n, k, group;
  };
  const std::vector<Case> cases = {
      {1, 32, 32},    {7, 64, 32},    {16, 128, 64}, {17, 128, 128},
      {33, 256, 256}, {100, 96, -1},  {50, 36, -1},  {31, 7, -1},
      {48, 96, 12},   {24, 100, 20},  {64, 24, 4},   {32, 3, -1},
      {20, 384, 128}, {96, 512, 256}, {40, 520, 8},  {5, 60, 60}};
  uint32_t seed = 10;
  for (const Case& c : cases) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      for (DType act : {DType::kBF16, DType::kF32}) {
        const DType out = seed % 2 ? DType::kF32 : DType::kBF16;
        const bool bias = seed % 3 != 0;
        const LayerDesc desc = Desc(c.n, c.k, c.group, type, act, out, bias);
        // 40: the decoded-panel path.
        for (int64_t m : {1, 5, 13, 40}) {
          Check(desc, m, c.k + (seed % 4) * 3, c.n + (seed % 5), seed);
          ++seed;
        }
      }
    }
  }
}

TEST_P(Da8w4Test, LargeK) {
  Check(Desc(48, 4096, 128, WeightType::kS4, DType::kBF16, DType::kBF16, true),
        3, 4096, 48, 1);
  Check(Desc(36, 4096, -1, WeightType::kU4, DType::kF32, DType::kF32, false), 7,
        4100, 40, 2);
}

TEST_P(Da8w4Test, NonFiniteAndZeroRows) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    const LayerDesc desc =
        Desc(40, 128, 32, WeightType::kU4, act, DType::kBF16, true);
    const CanonicalWeights w = RandomWeights(desc, 5);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const int64_t m = 7;
    auto x = RandomActivations(desc, m, desc.k, 6);
    testing::SetActivation(desc, &x, desc.k, 1, 100, std::nanf(""));
    testing::SetActivation(desc, &x, desc.k, 3, 0, INFINITY);
    testing::SetActivation(desc, &x, desc.k, 4, 127, -INFINITY);
    for (int64_t j = 0; j < desc.k; ++j) {
      testing::SetActivation(desc, &x, desc.k, 5, j, 0.0f);
    }
    testing::SetActivation(desc, &x, desc.k, 6, 64, 3.0e38f);
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n));
    // The zero row is exactly the bias.
    auto y = RunToF32(**layer, m, x, desc.k);
    ASSERT_TRUE(y.ok());
    for (int64_t j = 0; j < desc.n; ++j) {
      EXPECT_EQ((*y)[5 * desc.n + j],
                internal::Bf16ToF32(internal::F32ToBf16(w.bias[j])));
      EXPECT_TRUE(std::isnan((*y)[1 * desc.n + j]));
      EXPECT_TRUE(std::isnan((*y)[3 * desc.n + j]));
    }
  }
}

// With power-of-two scales the f32 combination of the groups is exact, so
// the JIT result must equal the reference bit for bit: this checks the
// integer part (including the zero-point term) exactly.
// Per-group activation scales too: sa[g] * acc is rounded once in both, and
// the power-of-two weight scale keeps the rest exact.
TEST_P(Da8w4Test, IntegerPartIsExact) {
  for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
    for (int64_t group : {int64_t{32}, int64_t{128}, int64_t{-1}}) {
      for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
        LayerDesc desc =
            Desc(72, 512, group, type, DType::kF32, DType::kF32, false);
        desc.scale_dtype = DType::kF32;
        desc.act_quant = aq;
        CanonicalWeights w = RandomWeights(desc, 9);
        std::mt19937 rng(4);
        for (float& s : w.scales) {
          s = std::ldexp(rng() % 2 ? 1.0f : -1.0f,
                         -4 - static_cast<int>(rng() % 3));
        }
        auto layer = MakeLayer(desc, w);
        ASSERT_TRUE(layer.ok()) << layer.status();
        ASSERT_TRUE(HasJitKernel(**layer));
        const int64_t m = 41;  // above the hand-over: decoded panels
        auto x = RandomActivations(desc, m, desc.k, 8);
        for (int64_t j = 0; j < desc.k; ++j) {
          testing::SetActivation(desc, &x, desc.k, 2, j, 0.0f);
        }
        auto y = RunToF32(**layer, m, x, desc.k);
        ASSERT_TRUE(y.ok());
        for (int64_t i = 0; i < m; ++i) {
          const internal::QuantizedRow q = internal::QuantizeRowRef(
              x.data() + i * desc.k * 4, desc.act_dtype, desc.k,
              desc.group_size, desc.act_per_group());
          for (int64_t j = 0; j < desc.n; ++j) {
            const float want = internal::Da8w4OutputRef(w, q, j);
            const float got = (*y)[i * desc.n + j];
            ASSERT_EQ(std::memcmp(&want, &got, 4), 0)
                << "y[" << i << ", " << j << "] got " << got << " want " << want
                << " " << Describe(desc);
          }
        }
      }
    }
  }
}

TEST_P(Da8w4Test, AnyThreadCountGivesIdenticalResults) {
  ThreadsGuard restore;
  for (int64_t m : {1, 3, 40, 100}) {
    for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
      LayerDesc desc =
          Desc(200, 384, 128, WeightType::kU4, DType::kBF16, DType::kF32, true);
      desc.act_quant = aq;
      const CanonicalWeights w = RandomWeights(desc, 21);
      auto layer = MakeLayer(desc, w);
      ASSERT_TRUE(layer.ok());
      const auto x = RandomActivations(desc, m, desc.k, 22);
      std::vector<float> first;
      for (int threads : {1, 2, 3}) {
        SetNumThreads(threads);
        auto y = RunToF32(**layer, m, x, desc.k);
        ASSERT_TRUE(y.ok());
        if (threads == 1) {
          first = *y;
        } else {
          ASSERT_EQ(std::memcmp(first.data(), y->data(), first.size() * 4), 0)
              << "m=" << m << " threads=" << threads << " " << ToString(aq);
        }
      }
    }
  }
}

// Every register tile, chunk length and work split computes each output
// with the same arithmetic: the outputs are bit-identical to the defaults'.
void EveryTileShapeGivesIdenticalResults(IsaTier isa, ActQuant aq);

// Per-group activation scales likewise.
TEST_P(Da8w4Test, EveryTileShapeGivesIdenticalResults) {
  for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
    SCOPED_TRACE(ToString(aq));
    EveryTileShapeGivesIdenticalResults(GetParam(), aq);
  }
}

void EveryTileShapeGivesIdenticalResults(IsaTier isa, ActQuant aq) {
  LayerDesc desc =
      Desc(150, 320, 64, WeightType::kS4, DType::kBF16, DType::kBF16, true);
  desc.act_quant = aq;
  const CanonicalWeights w = RandomWeights(desc, 31);
  const int64_t m = 23;
  const auto x = RandomActivations(desc, m, desc.k, 32);
  auto run = [&](const internal::Da8w4Params& p) {
    std::string why;
    auto kernel = internal::MakeDa8w4JitKernel(desc, w, internal::HostCpu(),
                                               isa, p, &why);
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_NE(kernel->get(), nullptr) << why;
    std::vector<uint16_t> y(static_cast<size_t>(m * desc.n));
    (*kernel)->Run({m, x.data(), desc.k, y.data(), desc.n});
    return y;
  };
  const internal::Da8w4Params defaults =
      internal::DefaultDa8w4Params(internal::HostCpu(), isa);
  const std::vector<uint16_t> want = run(defaults);
  const int max_blocks = internal::Da8w4MaxTileBlocks(isa);
  for (int mr = 1; mr <= 6; ++mr) {
    for (int chunk : {1, 3, 8}) {
      internal::Da8w4Params p = defaults;
      p.mr = mr;
      // Full register budget, and half of it.
      p.nblk = chunk == 8 ? max_blocks / mr : std::max(1, max_blocks / mr / 2);
      p.small_m_nblk = 1 + mr % 3;
      p.chunk_quads = chunk;
      p.handover_m = mr % 2 ? 0 : 64;
      p.panel_bytes = mr * 3000;
      SCOPED_TRACE(absl::StrCat("mr=", mr, " nblk=", p.nblk, " chunk=", chunk));
      EXPECT_EQ(run(p), want);
    }
  }
  // Decoded-panel tiles: every height and width the registers allow, any
  // panel size, the threshold below and above m.
  for (int pmr = 1; pmr <= max_blocks; ++pmr) {
    for (int pnblk = 1; pnblk <= 3; ++pnblk) {
      if (!internal::MakeDa8w4GemmPlan(isa, pmr, pnblk, /*decoded=*/true)
               .ok()) {
        continue;
      }
      internal::Da8w4Params p = defaults;
      p.handover_m = pmr % 2 ? 0 : 8;
      p.panel_min_m = pnblk == 2 ? 0 : 23;
      p.panel_mr = pmr;
      p.panel_nblk = pnblk;
      p.chunk_quads = pmr % 3 == 0 ? 3 : 8;
      p.panel_bytes = pmr * 5000;
      SCOPED_TRACE(absl::StrCat("panel_mr=", pmr, " panel_nblk=", pnblk));
      EXPECT_EQ(run(p), want);
    }
  }
}

TEST_P(Da8w4Test, KernelNamesSayWhatRuns) {
  const LayerDesc desc =
      Desc(4096, 256, 128, WeightType::kS4, DType::kBF16, DType::kF32, false);
  auto layer = MakeLayer(desc, RandomWeights(desc, 1));
  ASSERT_TRUE(layer.ok());
  const std::vector<std::string> names = (*layer)->kernel_names();
  ASSERT_GE(names.size(), 3u);
  // DA8W4 code needs the vector width only: AVX512_BF16 runs the VNNI code.
  const char* isa =
      internal::TraitsOf(internal::TraitsOf(GetParam()).vector_tier).suffix;
  EXPECT_EQ(names[0].rfind("quant_", 0), 0u) << names[0];
  // The panel decoder, where this CPU class's defaults decode panels (not
  // on Zen 4's AVX-512, da8w4_params.cc); then the large-M tile.
  const internal::Da8w4Params p =
      internal::DefaultDa8w4Params(internal::HostCpu(), GetParam());
  size_t tile = 1;
  if (p.panels()) {
    EXPECT_EQ(names[tile++], absl::StrCat("da8w4dec__", isa));
  }
  for (const std::string& n : names) {
    EXPECT_TRUE(testing::KernelNameIs(n, "", isa));
    EXPECT_TRUE(p.panels() || n.find("da8w4dec") == std::string::npos) << n;
  }
  EXPECT_NE(
      names[tile].find(absl::StrCat("da8w4_s4_g128_n4096_k256_m", p.mr, "x")),
      std::string::npos)
      << names[tile];
}

TEST_P(Da8w4Test, GroupNotMultipleOf4RunsOnReference) {
  const LayerDesc desc =
      Desc(24, 48, 6, WeightType::kS4, DType::kBF16, DType::kF32, true);
  const CanonicalWeights w = RandomWeights(desc, 2);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  ASSERT_EQ((*layer)->kernel_names(),
            std::vector<std::string>{
                "reference_da8w4 (group 6 is not a multiple of 4)"});
  const auto x = RandomActivations(desc, 3, desc.k, 3);
  EXPECT_TRUE(RunAndCheck(**layer, w, 3, x, desc.k, desc.n));
}

INSTANTIATE_TEST_SUITE_P(Isa, Da8w4Test,
                         ::testing::ValuesIn(testing::Da8w4IsaTiers()),
                         testing::IsaTierName);

// The AVX-512 kernels are JIT-compiled on every machine (encodings, register
// budget, displacements), whether or not they can run here.
TEST(Da8w4Generation, Avx512KernelsGenerateForManyShapes) {
  struct Case {
    int64_t n, k, group;
    WeightType type;
    DType out;
    DType scales;  // stored as they are (runtime/scale_storage.h)
  };
  for (const Case& c : std::vector<Case>{
           {4096, 512, 128, WeightType::kS4, DType::kBF16, DType::kBF16},
           {256, 4096, 128, WeightType::kU4, DType::kF32, DType::kF16},
           {40, 14336, -1, WeightType::kS4, DType::kF32, DType::kF32},
           {33, 96, 12, WeightType::kU4, DType::kBF16, DType::kBF16},
           {1, 4, -1, WeightType::kS4, DType::kBF16, DType::kF16},
           {100, 7, -1, WeightType::kU4, DType::kF32, DType::kF32}}) {
    LayerDesc desc =
        Desc(c.n, c.k, c.group, c.type, DType::kBF16, c.out, c.n % 2 == 0);
    desc.scale_dtype = c.scales;
    const CanonicalWeights w = RandomWeights(desc, 1);
    // Zen 4's AVX-512 defaults decode no panels (da8w4_params.cc), Zen 5's
    // do: both sets generate on every machine.
    for (const int zen : {4, 5}) {
      internal::CpuProfile cpu = internal::HostCpu();
      cpu.zen_generation = zen;
      std::string why;
      auto kernel = internal::MakeDa8w4JitKernel(desc, w, cpu,
                                                 IsaTier::kAvx512Vnni, &why);
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      ASSERT_NE(kernel->get(), nullptr) << why;
      bool decoded_tile = false;
      for (const std::string& n : (*kernel)->kernel_names()) {
        EXPECT_TRUE(testing::KernelNameIs(n, "", "avx512vnni"));
        // The default decoded-panel tile: 14 rows x one 32-column block.
        if (n.find("_m14x32_") != std::string::npos &&
            n.find("_f2") != std::string::npos) {
          decoded_tile = true;
        }
      }
      EXPECT_EQ(decoded_tile, zen != 4)
          << "Zen " << zen << ": " << (*kernel)->kernel_names()[1];
    }
  }
}

// Both ISAs compute every output with the same integer and f32 operations
// in the same order, so their outputs agree bit for bit.
TEST(Da8w4Avx512, MatchesAvx2BitForBit) {
  if (!testing::CanRunTier(IsaTier::kAvx512Vnni)) {
    GTEST_SKIP() << testing::WhyCannotRunTier(IsaTier::kAvx512Vnni)
                 << ": cannot compare the AVX-512 kernels with the AVX2 ones "
                    "here";
  }
  for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
    for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
      LayerDesc desc =
          Desc(77, 640, 128, type, DType::kBF16, DType::kF32, true);
      desc.act_quant = aq;
      const CanonicalWeights w = RandomWeights(desc, 41);
      const int64_t m = 19;
      const auto x = RandomActivations(desc, m, desc.k, 42);
      std::vector<std::vector<float>> y;
      for (IsaTier isa : testing::Da8w4IsaTiers()) {
        std::string why;
        auto kernel = internal::MakeDa8w4JitKernel(desc, w, internal::HostCpu(),
                                                   isa, &why);
        ASSERT_TRUE(kernel.ok()) << kernel.status();
        ASSERT_NE(kernel->get(), nullptr) << why;
        y.emplace_back(static_cast<size_t>(m * desc.n));
        (*kernel)->Run({m, x.data(), desc.k, y.back().data(), desc.n});
      }
      EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), y[0].size() * 4), 0)
          << ToString(aq);
    }
  }
}

// The JIT panel decoder writes exactly what the portable decode does, for
// any number of quads (the unrolled loop and its remainder), and not one
// byte past the panel. Generated for both tiers on every machine.
void CheckJitDecode(IsaTier isa) {
  absl::StatusOr<std::shared_ptr<const internal::Generator>> gen =
      internal::GetDa8w4DecodeKernel(isa);
  ASSERT_TRUE(gen.ok()) << gen.status();
  if (!testing::CanRunTier(isa)) {
    GTEST_SKIP() << "decoder generated, not run: "
                 << testing::WhyCannotRunTier(isa);
  }
  const auto decode = (*gen)->entry<internal::Da8w4DecodeFn>();
  for (int64_t k : {4, 12, 16, 20, 36, 4096}) {
    internal::Da8w4Packed packed;
    packed.layout.lanes = internal::TraitsOf(isa).lanes32();
    packed.layout.n = 3 * packed.layout.block_cols();
    packed.layout.k = k;
    packed.layout.group_size = k;
    const internal::Da8w4Layout& lay = packed.layout;
    std::mt19937 rng(static_cast<uint32_t>(k));
    packed.weights.resize(
        static_cast<size_t>(lay.blocks() * lay.block_weight_bytes()));
    for (uint8_t& b : packed.weights) b = static_cast<uint8_t>(rng());
    for (int64_t b0 : {int64_t{0}, int64_t{1}}) {
      const int64_t b1 = lay.blocks();
      const size_t bytes =
          static_cast<size_t>((b1 - b0) * lay.decoded_block_bytes());
      std::vector<uint8_t> want(bytes), got(bytes + 64, 0xA5);
      internal::DecodeDa8w4Blocks(packed, b0, b1, want.data());
      const internal::Da8w4DecodeArgs args{
          packed.weights.data() + b0 * lay.block_weight_bytes(), got.data(),
          (b1 - b0) * lay.k_quads()};
      decode(&args);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), bytes), 0)
          << "k " << k << " from block " << b0;
      for (size_t i = bytes; i < got.size(); ++i) {
        ASSERT_EQ(got[i], 0xA5)
            << "wrote byte " << i - bytes << " past the panel";
      }
    }
  }
}

TEST(Da8w4Decode, JitMatchesPortableDecodeAvx2) {
  CheckJitDecode(IsaTier::kAvx2);
}

TEST(Da8w4Decode, JitMatchesPortableDecodeAvx512) {
  CheckJitDecode(IsaTier::kAvx512Vnni);
}

TEST(Da8w4Generation, RefusesWithReason) {
  const LayerDesc desc =
      Desc(16, 60, 6, WeightType::kU4, DType::kF32, DType::kF32, false);
  std::string why;
  auto kernel = internal::MakeDa8w4JitKernel(
      desc, RandomWeights(desc, 1), internal::HostCpu(), IsaTier::kAvx2, &why);
  ASSERT_TRUE(kernel.ok());
  EXPECT_EQ(kernel->get(), nullptr);
  EXPECT_EQ(why, "group 6 is not a multiple of 4");
}

TEST(Da8w4Generation, BadExplicitParamsAreAnError) {
  const LayerDesc desc =
      Desc(16, 64, 32, WeightType::kS4, DType::kF32, DType::kF32, false);
  internal::Da8w4Params p;
  p.mr = 7;  // 7 x 1 blocks need 14 + 4 ymm
  std::string why;
  auto kernel = internal::MakeDa8w4JitKernel(desc, RandomWeights(desc, 1),
                                             internal::HostCpu(),
                                             IsaTier::kAvx2, p, &why);
  EXPECT_FALSE(kernel.ok());
}

TEST(Da8w4Params, TuningOverridesAndRejects) {
  const internal::Da8w4Params base =
      internal::DefaultDa8w4Params(internal::HostCpu(), IsaTier::kAvx2);
  auto tuned = internal::ApplyDa8w4Params(
      {{"mr", 4}, {"nblk", 1}, {"handover_m", 8}, {"panel_bytes", 65536}}, base,
      IsaTier::kAvx2);
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(tuned->mr, 4);
  EXPECT_EQ(tuned->handover_m, 8);
  EXPECT_EQ(tuned->panel_bytes, 65536);
  EXPECT_EQ(tuned->chunk_quads, base.chunk_quads);
  EXPECT_FALSE(
      internal::ApplyDa8w4Params({{"mr", 7}}, base, IsaTier::kAvx2).ok());
  EXPECT_TRUE(
      internal::ApplyDa8w4Params({{"mr", 7}}, base, IsaTier::kAvx512Vnni).ok());
  EXPECT_FALSE(
      internal::ApplyDa8w4Params({{"chunk_quads", 9}}, base, IsaTier::kAvx2)
          .ok());
  EXPECT_FALSE(
      internal::ApplyDa8w4Params({{"bogus", 1}}, base, IsaTier::kAvx2).ok());
  auto panel = internal::ApplyDa8w4Params(
      {{"panel_mr", 5}, {"panel_nblk", 1}, {"panel_min_m", 64}}, base,
      IsaTier::kAvx2);
  ASSERT_TRUE(panel.ok()) << panel.status();
  EXPECT_EQ(panel->panel_mr, 5);
  EXPECT_EQ(panel->panel_min_m, 64);
  // 14 x 1 fits 32 zmm (28 accumulators + 2 weights + 1 broadcast); 7 x 2
  // (28 + 4 + 1) does not, and 14 rows never fit 16 ymm.
  EXPECT_TRUE(
      internal::ApplyDa8w4Params({{"panel_mr", 14}}, base, IsaTier::kAvx512Vnni)
          .ok());
  EXPECT_FALSE(internal::ApplyDa8w4Params({{"panel_mr", 7}, {"panel_nblk", 2}},
                                          base, IsaTier::kAvx512Vnni)
                   .ok());
  EXPECT_FALSE(
      internal::ApplyDa8w4Params({{"panel_mr", 14}}, base, IsaTier::kAvx2)
          .ok());
}

}  // namespace
}  // namespace w4jit
