// The DA8W4 AMX tile tier (jit/da8w4_amx_generator.h): its tile plan and
// its kernels' generation on every CPU; where the CPU has AMX (and W4JIT_ISA
// does not cap it away), its outputs bit for bit against the AVX-512
// kernels' (groups 32 to 1024 and per channel, s4 and u4, both
// activation-scale choices, bias, every epilogue, M and N tails, any tile
// height and thread count) and against the reference through the public
// API. Elsewhere the runs skip with the reason.
#include <array>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "jit/da8w4_amx_plan.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/jit_kernels.h"
#include "tests/util/isa.h"
#include "tests/util/test_epilogues.h"
#include "tests/util/test_layer.h"
#include "w4jit/parallel.hpp"

namespace w4jit {
namespace {

using internal::CanonicalWeights;
using internal::Da8w4Params;
using internal::IsaTier;

LayerDesc Desc(int64_t n, int64_t k, int64_t group, WeightType type, DType out,
               bool bias) {
  return testing::KernelTestDesc(Mode::kDA8W4, n, k, group, type, DType::kBF16,
                                 out, bias);
}

// The defaults of the AMX tier with the tiles from `min_m` rows on.
Da8w4Params AmxParams(int min_m, int mr) {
  Da8w4Params p =
      internal::DefaultDa8w4Params(internal::HostCpu(), IsaTier::kAmx);
  p.amx_min_m = min_m;
  p.amx_mr = mr;
  p.handover_m = 0;
  return p;
}

std::unique_ptr<internal::LinearKernel> Make(const LayerDesc& desc,
                                             const CanonicalWeights& w,
                                             const Da8w4Params& p) {
  std::string why;
  auto kernel = internal::MakeDa8w4JitKernel(desc, w, internal::HostCpu(),
                                             IsaTier::kAmx, p, &why);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (!kernel.ok()) return nullptr;
  EXPECT_NE(kernel->get(), nullptr) << why;
  return *std::move(kernel);
}

bool HasAmxKernel(const internal::LinearKernel& k) {
  for (const std::string& n : k.kernel_names()) {
    if (n.size() > 5 && n.compare(n.size() - 5, 5, "__amx") == 0) return true;
  }
  return false;
}

TEST(Da8w4AmxPlan, KStepsFollowTheGroups) {
  internal::Da8w4Layout lay;
  lay.lanes = 16;
  lay.n = 64;
  for (const auto& [k, group, step, steps] :
       std::vector<std::tuple<int64_t, int64_t, int, int64_t>>{
           {256, 32, 32, 1},
           {256, 64, 64, 1},
           {512, 128, 64, 2},
           {4096, 4096, 64, 64},
           {96, 96, 32, 3}}) {
    lay.k = k;
    lay.group_size = group;
    auto plan = internal::MakeDa8w4AmxPlan(20, 1, true, lay);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->k_step, step) << "group " << group;
    EXPECT_EQ(plan->k_steps, steps) << "group " << group;
    EXPECT_EQ(plan->row_tiles, 2);
    EXPECT_EQ(plan->Rows(1), 4);
    const std::array<uint8_t, 64> cfg = plan->TileConfig();
    EXPECT_EQ(cfg[0], 1);
    EXPECT_EQ(cfg[48 + internal::Da8w4AmxPlan::kA], 16);
    EXPECT_EQ(cfg[16 + 2 * internal::Da8w4AmxPlan::kA], step);
    EXPECT_EQ(cfg[48 + internal::Da8w4AmxPlan::kB], step / 4);
  }
  lay.k = 96;
  lay.group_size = 12;
  const absl::Status bad = internal::MakeDa8w4AmxPlan(8, 1, true, lay).status();
  EXPECT_NE(bad.message().find("group 12"), std::string::npos) << bad;
  lay.group_size = 32;
  EXPECT_FALSE(internal::MakeDa8w4AmxPlan(33, 1, true, lay).ok());
  EXPECT_FALSE(internal::MakeDa8w4AmxPlan(8, 2, true, lay).ok());
  EXPECT_FALSE(internal::MakeDa8w4AmxPlan(8, 1, false, lay).ok());
}

// Generated (not run) on every CPU: names, encodings, tails, every height.
TEST(Da8w4AmxGeneration, KernelsGenerateEverywhere) {
  for (const int64_t group : {int64_t{32}, int64_t{64}, int64_t{128}, -1L}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      const LayerDesc desc = Desc(72, 512, group, type, DType::kBF16, true);
      const CanonicalWeights w = testing::RandomWeights(desc, 3);
      auto kernel = Make(desc, w, AmxParams(0, 32));
      ASSERT_NE(kernel, nullptr);
      EXPECT_TRUE(HasAmxKernel(*kernel));
    }
  }
  // A group the tiles cannot step keeps the vector kernels.
  const LayerDesc odd = Desc(40, 96, 12, WeightType::kS4, DType::kF32, false);
  auto kernel = Make(odd, testing::RandomWeights(odd, 4), AmxParams(0, 32));
  ASSERT_NE(kernel, nullptr);
  EXPECT_FALSE(HasAmxKernel(*kernel));
}

TEST(Da8w4AmxParams, OnlyTheAmxTierTakesTiles) {
  Da8w4Params p = AmxParams(64, 32);
  EXPECT_TRUE(internal::CheckDa8w4Params(p, IsaTier::kAmx).ok());
  const absl::Status s = internal::CheckDa8w4Params(p, IsaTier::kAvx512Bf16);
  EXPECT_NE(s.message().find("no AMX"), std::string::npos) << s;
  p.amx_mr = 33;
  EXPECT_FALSE(internal::CheckDa8w4Params(p, IsaTier::kAmx).ok());
}

class Da8w4AmxRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(IsaTier::kAmx)) {
      GTEST_SKIP() << testing::WhyCannotRunTier(IsaTier::kAmx)
                   << ": its kernels are generated (Da8w4AmxGeneration) but "
                      "cannot run here";
    }
  }

  // y of the kernel with params p, as bytes; binary operands as given.
  static std::vector<uint8_t> Run(
      const LayerDesc& desc, const CanonicalWeights& w, const Da8w4Params& p,
      int64_t m, const std::vector<uint8_t>& x,
      const std::vector<std::vector<uint8_t>>& ops) {
    auto kernel = Make(desc, w, p);
    if (kernel == nullptr) return {};
    EXPECT_EQ(HasAmxKernel(*kernel), p.amx());
    const int64_t out_n = desc.out_n();
    const size_t size = internal::DTypeSize(desc.out_dtype);
    std::vector<uint8_t> y(static_cast<size_t>(m * out_n) * size, 0xAB);
    internal::RunArgs args{m, x.data(), desc.k, y.data(), out_n};
    for (int i = 0; i < desc.epilogue.num_binary; ++i) {
      args.ep_data[i] = ops[i].data();
      args.ep_ld[i] = out_n;
    }
    kernel->Run(args);
    return y;
  }

  // The AMX tiles (every height in `heights`) against the AVX-512 kernels.
  void ExpectSameAsAvx512(const LayerDesc& desc, std::vector<int64_t> ms,
                          std::vector<int> heights, uint32_t seed,
                          bool act_order = false) {
    CanonicalWeights w = testing::RandomWeights(desc, seed);
    if (act_order) w.k_perm = testing::RandomActOrder(desc, seed + 1);
    Da8w4Params vec = AmxParams(0, 32);
    vec.amx_min_m = Da8w4Params::kNoAmx;
    for (const int64_t m : ms) {
      const std::vector<uint8_t> x =
          testing::RandomActivations(desc, m, desc.k, seed + m);
      std::vector<std::vector<uint8_t>> ops;
      for (int i = 0; i < desc.epilogue.num_binary; ++i) {
        LayerDesc od = desc;
        od.act_dtype = desc.epilogue.binary[i].dtype;
        od.k = desc.out_n();
        ops.push_back(testing::RandomActivations(od, m, od.k, seed + 7 * i));
      }
      const std::vector<uint8_t> want = Run(desc, w, vec, m, x, ops);
      for (const int mr : heights) {
        SCOPED_TRACE(
            absl::StrCat(testing::Describe(desc), " m=", m, " amx_mr=", mr));
        ASSERT_EQ(Run(desc, w, AmxParams(0, mr), m, x, ops), want);
      }
    }
  }
};

TEST_F(Da8w4AmxRun, GroupsTypesAndTailsMatchAvx512BitForBit) {
  uint32_t seed = 1;
  for (const int64_t group : {int64_t{32}, int64_t{64}, int64_t{128}, -1L}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      for (ActQuant aq : {ActQuant::kPerToken, ActQuant::kPerGroup}) {
        // N = 72: a partial last block (72 = 2 x 32 + 8).
        LayerDesc desc = Desc(72, 384 + (group == -1 ? 32 : 0), group, type,
                              seed % 2 ? DType::kF32 : DType::kBF16, seed % 3);
        desc.act_quant = aq;
        ExpectSameAsAvx512(desc, {1, 5, 16, 17, 31, 32, 33, 70}, {32, 16, 7},
                           seed);
        ++seed;
      }
    }
  }
}

// Groups of 4 and 8 K steps (the previous group's end in that many parts,
// some of them empty for short tiles) and of 16 (a K loop, the previous
// group's end whole behind its first step).
TEST_F(Da8w4AmxRun, LongGroupsMatchAvx512BitForBit) {
  uint32_t seed = 20;
  for (const int64_t group : {int64_t{256}, int64_t{512}, int64_t{1024}}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      LayerDesc desc = Desc(40, 2 * group, group, type,
                            seed % 2 ? DType::kF32 : DType::kBF16, seed % 3);
      desc.act_quant = seed % 2 ? ActQuant::kPerGroup : ActQuant::kPerToken;
      ExpectSameAsAvx512(desc, {1, 3, 17, 40}, {32, 16, 3}, seed);
      ++seed;
    }
  }
}

TEST_F(Da8w4AmxRun, EpiloguesMatchAvx512BitForBit) {
  uint32_t seed = 40;
  for (const Epilogue& e : testing::TestEpilogues()) {
    // 200 columns: a partial last block (silu_mul: 100 of 112 per half).
    LayerDesc desc = Desc(200, 256, 64, WeightType::kU4, DType::kBF16, true);
    desc.epilogue = e;
    ExpectSameAsAvx512(desc, {3, 40}, {32, 13}, seed++);
  }
}

TEST_F(Da8w4AmxRun, F32ActivationsActOrderAndBf16BiasMatchAvx512) {
  uint32_t seed = 60;
  for (const int64_t group : {int64_t{32}, int64_t{128}, -1L}) {
    LayerDesc desc =
        testing::KernelTestDesc(Mode::kDA8W4, 96, 256, group, WeightType::kU4,
                                DType::kF32, DType::kF32, true);
    desc.bias_dtype = DType::kBF16;
    ExpectSameAsAvx512(desc, {24, 50}, {32, 20}, seed++,
                       /*act_order=*/group != -1);
  }
}

// Each calling thread (not only the pool's) configures its own tiles: runs
// from several threads at once agree with one run alone.
TEST_F(Da8w4AmxRun, ConcurrentCallersGetIdenticalResults) {
  const LayerDesc desc = Desc(160, 512, 64, WeightType::kS4, DType::kF32, true);
  const CanonicalWeights w = testing::RandomWeights(desc, 70);
  auto kernel = Make(desc, w, AmxParams(0, 32));
  ASSERT_NE(kernel, nullptr);
  const int64_t m = 48;
  const std::vector<uint8_t> x =
      testing::RandomActivations(desc, m, desc.k, 71);
  auto run = [&] {
    std::vector<float> y(static_cast<size_t>(m * desc.n));
    kernel->Run({m, x.data(), desc.k, y.data(), desc.n});
    return y;
  };
  const std::vector<float> want = run();
  std::vector<std::vector<float>> got(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) got[t] = run();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::vector<float>& y : got) {
    ASSERT_EQ(std::memcmp(y.data(), want.data(), want.size() * 4), 0);
  }
}

TEST_F(Da8w4AmxRun, AnyThreadCountGivesIdenticalResults) {
  struct Restore {
    ~Restore() { SetNumThreads(0); }
  } restore;
  const LayerDesc desc =
      Desc(300, 512, 128, WeightType::kS4, DType::kF32, true);
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    ExpectSameAsAvx512(desc, {100}, {32}, 9);
  }
}

// Through the public API with the tiles forced from M = 1: against the
// reference with the tolerances of numerics.md, and the integer part
// exactly (scales powers of two, as da8w4_kernel_test's IntegerPartIsExact).
TEST_F(Da8w4AmxRun, PublicApiMatchesTheReference) {
  internal::ScopedDa8w4ParamsOverride o([](Da8w4Params* p) {
    p->amx_min_m = 1;
    p->handover_m = 0;
  });
  internal::ScopedIsaCap cap(IsaTier::kAmx);
  for (const int64_t group : {int64_t{32}, int64_t{64}, int64_t{128}, -1L}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      const LayerDesc desc = Desc(100, 512, group, type, DType::kBF16, true);
      const CanonicalWeights w = testing::RandomWeights(desc, 5);
      auto layer = testing::MakeLayer(desc, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      bool amx = false;
      for (const std::string& n : (*layer)->kernel_names()) {
        amx = amx || n.find("__amx") != std::string::npos;
      }
      ASSERT_TRUE(amx);
      for (int64_t m : {1, 9, 33, 64}) {
        const auto x = testing::RandomActivations(desc, m, desc.k, 6 + m);
        EXPECT_TRUE(testing::RunAndCheck(**layer, w, m, x, desc.k, desc.n))
            << testing::Describe(desc) << " m=" << m;
      }
    }
  }
}

}  // namespace
}  // namespace w4jit
