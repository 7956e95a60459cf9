// The W4A16 AMX tile tier (jit/w4a16_amx_generator.h and its decoder): the
// plan and the kernels' generation on every CPU; where the CPU has AMX (and
// W4JIT_ISA does not cap it away), its outputs against the reference with
// numerics.md's tolerances through the public API: s4, u4 and float zero
// points, groups 32, 64, 128 and per channel, bf16 and f32 x, act-order,
// bias, every epilogue, M and N tails, several K blocks, thread counts, and
// the vector kernels below amx_min_m. Elsewhere the runs skip with the
// reason.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "check/layer_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "jit/w4a16_amx_decode_generator.h"
#include "jit/w4a16_amx_generator.h"
#include "jit/w4a16_amx_plan.h"
#include "runtime/jit_kernels.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_epilogues.h"
#include "tests/util/test_layer.h"
#include "w4jit/parallel.hpp"

namespace w4jit {
namespace {

using internal::CanonicalWeights;
using internal::IsaTier;
using internal::W4a16Params;

bool HasAmxKernel(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (n.rfind("w4a16amx_", 0) == 0) return true;
  }
  return false;
}

TEST(W4a16AmxPlan, TilesFollowTheRows) {
  for (const int mr : {1, 7, 16, 17, 32}) {
    auto plan = internal::MakeW4a16AmxPlan(mr, 128);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->k_steps, 4);
    EXPECT_EQ(plan->row_tiles, mr > 16 ? 2 : 1);
    const std::array<uint8_t, 64> cfg = plan->TileConfig();
    EXPECT_EQ(cfg[0], 1);
    EXPECT_EQ(cfg[48 + internal::W4a16AmxPlan::kA], mr < 16 ? mr : 16);
    EXPECT_EQ(cfg[16 + 2 * internal::W4a16AmxPlan::kA], 64);
    EXPECT_EQ(cfg[48 + internal::W4a16AmxPlan::kB], 16);
    EXPECT_EQ(cfg[48 + internal::W4a16AmxPlan::kA + 1], mr > 16 ? mr - 16 : 0);
  }
  const absl::Status bad = internal::MakeW4a16AmxPlan(8, 48).status();
  EXPECT_NE(bad.message().find("group 48"), std::string::npos) << bad;
  EXPECT_FALSE(internal::MakeW4a16AmxPlan(33, 64).ok());
  EXPECT_FALSE(internal::MakeW4a16AmxPlan(0, 64).ok());
}

W4a16Params AmxParams(int64_t min_m, int64_t kc = 1024) {
  W4a16Params p =
      internal::DefaultW4a16Params(internal::HostCpu(), IsaTier::kAmx);
  p.flavor = internal::Flavor::kF32Fma;
  p.amx_min_m = min_m;
  p.amx_kc = kc;
  return p;
}

// Generated (not run) on every CPU: every format, group and epilogue.
TEST(W4a16AmxGeneration, KernelsGenerateEverywhere) {
  for (const int64_t group : {int64_t{32}, int64_t{64}, int64_t{128}, -1L}) {
    for (const bool float_zero : {false, true}) {
      for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
        if (float_zero && type == WeightType::kS4) continue;
        LayerDesc desc =
            testing::KernelTestDesc(Mode::kW4A16, 72, 512, group, type,
                                    DType::kBF16, DType::kBF16, true);
        if (float_zero) {
          desc.zero_point_domain = ZeroPointDomain::kFloat;
          desc.zero_point_dtype = DType::kBF16;
        }
        const CanonicalWeights w = testing::RandomWeights(desc, 3);
        std::string why;
        auto kernel = internal::MakeW4a16JitKernel(
            desc, w, internal::HostCpu(), IsaTier::kAmx, AmxParams(1), &why);
        ASSERT_TRUE(kernel.ok()) << kernel.status();
        ASSERT_NE(kernel->get(), nullptr) << why;
        EXPECT_TRUE(HasAmxKernel((*kernel)->kernel_names()))
            << testing::Describe(desc);
      }
    }
  }
  // A group the tiles cannot step keeps the vector kernels.
  const LayerDesc odd =
      testing::KernelTestDesc(Mode::kW4A16, 40, 96, 48, WeightType::kS4,
                              DType::kBF16, DType::kF32, false);
  std::string why;
  auto kernel = internal::MakeW4a16JitKernel(
      odd, testing::RandomWeights(odd, 4), internal::HostCpu(), IsaTier::kAmx,
      AmxParams(1), &why);
  ASSERT_TRUE(kernel.ok() && kernel->get() != nullptr) << why;
  EXPECT_FALSE(HasAmxKernel((*kernel)->kernel_names()));
}

TEST(W4a16AmxParams, OnlyTheAmxTierTakesTiles) {
  W4a16Params p = AmxParams(64);
  EXPECT_TRUE(internal::CheckW4a16Params(p, IsaTier::kAmx).ok());
  const absl::Status s = internal::CheckW4a16Params(p, IsaTier::kAvx512Bf16);
  EXPECT_NE(s.message().find("no AMX"), std::string::npos) << s;
  p.amx_kc = 16;
  EXPECT_FALSE(internal::CheckW4a16Params(p, IsaTier::kAmx).ok());
}

class W4a16AmxRun : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(IsaTier::kAmx)) {
      GTEST_SKIP() << testing::WhyCannotRunTier(IsaTier::kAmx)
                   << ": its kernels are generated (W4a16AmxGeneration) but "
                      "cannot run here";
    }
  }

  // A layer through the public API with the tiles from `min_m` rows on
  // (the parameters and the tier apply when it is made), or null.
  static std::unique_ptr<Layer> TilesLayer(const LayerDesc& desc,
                                           const CanonicalWeights& w,
                                           int64_t min_m = 1, int64_t kc = 1024,
                                           int64_t row_blocks = 2) {
    internal::ScopedW4a16ParamsOverride o([&](W4a16Params* p) {
      p->flavor = internal::Flavor::kF32Fma;
      p->amx_min_m = min_m;
      p->amx_kc = kc;
      p->amx_row_blocks = row_blocks;
    });
    internal::ScopedIsaCap cap(IsaTier::kAmx);
    auto layer = testing::MakeLayer(desc, w);
    EXPECT_TRUE(layer.ok()) << layer.status();
    if (!layer.ok()) return nullptr;
    EXPECT_TRUE(HasAmxKernel((*layer)->kernel_names()))
        << testing::Describe(desc);
    return *std::move(layer);
  }

  // Every m against the reference (numerics.md), epilogue operands
  // included.
  static void ExpectMatchesReference(const LayerDesc& desc,
                                     const std::vector<int64_t>& ms,
                                     uint32_t seed, int64_t min_m = 1,
                                     int64_t kc = 1024,
                                     bool act_order = false) {
    CanonicalWeights w = testing::RandomWeights(desc, seed);
    if (act_order) w.k_perm = testing::RandomActOrder(desc, seed + 1);
    const std::unique_ptr<Layer> layer = TilesLayer(desc, w, min_m, kc);
    ASSERT_NE(layer, nullptr);
    const int64_t n_out = desc.out_n();
    for (const int64_t m : ms) {
      const int64_t ldx = desc.k + 3, ldy = n_out + 5;
      const auto x = testing::RandomActivations(desc, m, ldx, seed + 11 * m);
      const check::EpilogueOperands ops =
          check::RandomEpilogueOperands(desc, m, /*pad=*/7, seed + 5);
      const check::CheckResult r =
          check::CheckRun(*layer, w, m, x.data(), ldx, ldy, nullptr,
                          desc.epilogue.num_binary > 0 ? &ops : nullptr);
      EXPECT_TRUE(r.ok()) << r.bad << " bad outputs, "
                          << testing::Describe(desc) << " m=" << m << "\n"
                          << r.report;
    }
  }
};

TEST_F(W4a16AmxRun, FormatsGroupsAndTails) {
  uint32_t seed = 1;
  for (const int64_t group : {int64_t{32}, int64_t{64}, int64_t{128}, -1L}) {
    for (const int zero : {0, 1, 2}) {  // s4, u4, float zero points
      // N = 72: a partial last block.
      LayerDesc desc = testing::KernelTestDesc(
          Mode::kW4A16, 72, 384 + (group == -1 ? 32 : 0), group,
          zero == 0 ? WeightType::kS4 : WeightType::kU4, DType::kBF16,
          seed % 2 ? DType::kF32 : DType::kBF16, seed % 3 != 0);
      if (zero == 2) {
        desc.zero_point_domain = ZeroPointDomain::kFloat;
        desc.zero_point_dtype = seed % 2 ? DType::kF32 : DType::kBF16;
      }
      SCOPED_TRACE(testing::Describe(desc));
      ExpectMatchesReference(desc, {1, 5, 16, 17, 31, 32, 33, 70}, seed);
      ++seed;
    }
  }
}

TEST_F(W4a16AmxRun, SeveralKBlocks) {
  uint32_t seed = 20;
  for (const int64_t group : {int64_t{64}, int64_t{128}, -1L}) {
    for (const int zero : {0, 1, 2}) {
      LayerDesc desc =
          testing::KernelTestDesc(Mode::kW4A16, 96, 1024, group,
                                  zero == 0 ? WeightType::kS4 : WeightType::kU4,
                                  DType::kBF16, DType::kBF16, true);
      if (zero == 2) {
        desc.zero_point_domain = ZeroPointDomain::kFloat;
        desc.zero_point_dtype = DType::kBF16;
      }
      SCOPED_TRACE(testing::Describe(desc));
      // K blocks of 256: four per call (per channel: segments of 256).
      ExpectMatchesReference(desc, {3, 40, 100}, seed++, 1, 256);
    }
  }
}

// Numerics::kZentorch: the panel holds the dequantized weights rounded to
// bf16 (the f32 panel path's weights), segments of K summed unscaled;
// groups need not be multiples of 32 (their multiple with 32 divides K).
TEST_F(W4a16AmxRun, ZentorchNumerics) {
  uint32_t seed = 90;
  for (const int64_t group : {int64_t{32}, int64_t{48}, int64_t{128}, -1L}) {
    for (const int zero : {0, 1, 2}) {
      LayerDesc desc = testing::KernelTestDesc(
          Mode::kW4A16, 72, group == 48 ? 576 : 512, group,
          zero == 0 ? WeightType::kS4 : WeightType::kU4, DType::kBF16,
          DType::kBF16, true);
      desc.numerics = Numerics::kZentorch;
      if (zero == 2) {
        desc.zero_point_domain = ZeroPointDomain::kFloat;
        desc.zero_point_dtype = DType::kBF16;
      }
      SCOPED_TRACE(testing::Describe(desc));
      // K blocks of 256 (288 for group 48): several segments per call.
      ExpectMatchesReference(desc, {1, 17, 40}, seed++, 1,
                             group == 48 ? 288 : 256);
    }
  }
}

TEST_F(W4a16AmxRun, Epilogues) {
  uint32_t seed = 40;
  for (const Epilogue& e : testing::TestEpilogues()) {
    // 200 columns: a partial last block (silu_mul: 100 of 128 per block).
    LayerDesc desc =
        testing::KernelTestDesc(Mode::kW4A16, 200, 256, 64, WeightType::kU4,
                                DType::kBF16, DType::kBF16, true);
    desc.epilogue = e;
    SCOPED_TRACE(testing::Describe(desc));
    ExpectMatchesReference(desc, {3, 40}, seed++);
  }
}

TEST_F(W4a16AmxRun, F32ActivationsWithBf16ComputeAndActOrder) {
  uint32_t seed = 60;
  for (const int64_t group : {int64_t{32}, int64_t{128}, -1L}) {
    LayerDesc desc =
        testing::KernelTestDesc(Mode::kW4A16, 96, 256, group, WeightType::kU4,
                                DType::kF32, DType::kF32, true);
    desc.allow_bf16_compute = true;
    desc.bias_dtype = DType::kBF16;
    SCOPED_TRACE(testing::Describe(desc));
    ExpectMatchesReference(desc, {24, 50}, seed++, 1, 1024,
                           /*act_order=*/group != -1);
  }
}

// f32 x without allow_bf16_compute stays on the vector kernels (the tiles
// would round x to bf16).
TEST_F(W4a16AmxRun, F32ActivationsKeepF32Compute) {
  internal::ScopedW4a16ParamsOverride o(
      [](W4a16Params* p) { p->amx_min_m = 1; });
  internal::ScopedIsaCap cap(IsaTier::kAmx);
  const LayerDesc desc =
      testing::KernelTestDesc(Mode::kW4A16, 64, 256, 64, WeightType::kS4,
                              DType::kF32, DType::kF32, false);
  auto layer = testing::MakeLayer(desc, testing::RandomWeights(desc, 2));
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_FALSE(HasAmxKernel((*layer)->kernel_names()));
}

// Two row tiles of one height in one call (amx_row_blocks 2: each column
// pair's units for both in turn) compute every row as a call of one does:
// the same bytes, whatever the format, the epilogue's operands (stepped a
// row at a time across both blocks), the column tail and the K blocks.
TEST_F(W4a16AmxRun, TwoRowBlocksPerCallGiveTheSameBytes) {
  uint32_t seed = 100;
  for (const int zero : {0, 1, 2}) {
    LayerDesc desc = testing::KernelTestDesc(
        Mode::kW4A16, 200, 512, 64,
        zero == 0 ? WeightType::kS4 : WeightType::kU4, DType::kBF16,
        seed % 2 ? DType::kF32 : DType::kBF16, true);
    desc.epilogue = testing::TestEpilogues()[zero + 1];
    if (zero == 2) {
      desc.zero_point_domain = ZeroPointDomain::kFloat;
      desc.zero_point_dtype = DType::kBF16;
    }
    SCOPED_TRACE(testing::Describe(desc));
    const CanonicalWeights w = testing::RandomWeights(desc, seed);
    const std::unique_ptr<Layer> one = TilesLayer(desc, w, 1, 256, 1);
    const std::unique_ptr<Layer> two = TilesLayer(desc, w, 1, 256, 2);
    ASSERT_NE(one, nullptr);
    ASSERT_NE(two, nullptr);
    bool named = false;
    for (const std::string& n : two->kernel_names()) {
      named |= n.find("_rb2_") != std::string::npos;
    }
    EXPECT_TRUE(named) << "no kernel of two row blocks";
    const int64_t n_out = desc.out_n();
    // 40 and 64: one call of two; 70: 24 + 23 + 23 (one alone, then two);
    // 100: two calls of two.
    for (const int64_t m :
         {int64_t{40}, int64_t{64}, int64_t{70}, int64_t{100}}) {
      const int64_t ldx = desc.k + 3, ldy = n_out + 5;
      const auto x = testing::RandomActivations(desc, m, ldx, seed + m);
      const check::EpilogueOperands ops =
          check::RandomEpilogueOperands(desc, m, /*pad=*/7, seed + 5);
      const check::EpilogueOperands* opsp =
          desc.epilogue.num_binary > 0 ? &ops : nullptr;
      // Both into buffers of the same sentinel, compared whole (the
      // columns past N_out included).
      const size_t bytes =
          static_cast<size_t>(m * ldy) * internal::DTypeSize(desc.out_dtype);
      std::vector<uint8_t> ya(bytes, 0xA5), yb(bytes, 0xA5);
      const check::CheckResult a =
          check::CheckRun(*one, w, m, x.data(), ldx, ldy, ya.data(), opsp);
      const check::CheckResult b =
          check::CheckRun(*two, w, m, x.data(), ldx, ldy, yb.data(), opsp);
      EXPECT_TRUE(a.ok()) << a.bad << " bad outputs, m=" << m << "\n"
                          << a.report;
      EXPECT_TRUE(b.ok()) << b.bad << " bad outputs, m=" << m << "\n"
                          << b.report;
      EXPECT_EQ(ya, yb) << "m=" << m;
    }
    ++seed;
  }
}

// The tiles from amx_min_m on, the vector kernels below: both within the
// tolerance at the handover.
TEST_F(W4a16AmxRun, AroundTheHandover) {
  const LayerDesc desc =
      testing::KernelTestDesc(Mode::kW4A16, 160, 512, 128, WeightType::kS4,
                              DType::kBF16, DType::kBF16, true);
  ExpectMatchesReference(desc, {1, 8, 23, 24, 25, 64}, 80, /*min_m=*/24);
}

TEST_F(W4a16AmxRun, AnyThreadCountGivesIdenticalResults) {
  struct Restore {
    ~Restore() { SetNumThreads(0); }
  } restore;
  const LayerDesc desc =
      testing::KernelTestDesc(Mode::kW4A16, 300, 512, 128, WeightType::kU4,
                              DType::kBF16, DType::kF32, true);
  const std::unique_ptr<Layer> layer =
      TilesLayer(desc, testing::RandomWeights(desc, 9));
  ASSERT_NE(layer, nullptr);
  const int64_t m = 100;
  const auto x = testing::RandomActivations(desc, m, desc.k, 10);
  std::vector<float> want;
  for (int threads : {1, 2, 3}) {
    SetNumThreads(threads);
    auto y = testing::RunToF32(*layer, m, x, desc.k);
    ASSERT_TRUE(y.ok()) << y.status();
    if (want.empty()) {
      want = *y;
    } else {
      ASSERT_EQ(*y, want) << threads << " threads";
    }
  }
}

// Each calling thread (not only the pool's) configures its own tiles.
TEST_F(W4a16AmxRun, ConcurrentCallersGetIdenticalResults) {
  const LayerDesc desc =
      testing::KernelTestDesc(Mode::kW4A16, 160, 512, 64, WeightType::kS4,
                              DType::kBF16, DType::kF32, true);
  const std::unique_ptr<Layer> layer =
      TilesLayer(desc, testing::RandomWeights(desc, 70));
  ASSERT_NE(layer, nullptr);
  const int64_t m = 48;
  const auto x = testing::RandomActivations(desc, m, desc.k, 71);
  auto run = [&] { return *testing::RunToF32(*layer, m, x, desc.k); };
  const std::vector<float> want = run();
  std::vector<std::vector<float>> got(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) got[t] = run();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::vector<float>& y : got) ASSERT_EQ(y, want);
}

// XINUSE (xgetbv with ecx = 1), bit 18: this thread's tile data is in use,
// not released to its initial state.
bool TileDataInUse() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
  return (lo >> 18) & 1;
}

// Runs each chunk on a thread of its own and counts the chunks that left
// their thread's tiles held.
class TileCheckingBackend final : public ParallelBackend {
 public:
  int concurrency() const override { return 3; }
  void Run(int num_chunks, const std::function<void(int)>& fn) override {
    std::vector<std::thread> threads;
    for (int c = 0; c < num_chunks; ++c) {
      threads.emplace_back([&, c] {
        fn(c);
        ++chunks;
        if (TileDataInUse()) ++held;
      });
    }
    for (std::thread& t : threads) t.join();
  }
  std::atomic<int> chunks{0};
  std::atomic<int> held{0};
};

// The calls of a chunk keep the tiles configured between them (same
// height: no ldtilecfg; W4a16AmxArgs::kKeepTiles), and the chunk's last
// call releases them: no thread leaves a chunk with its tiles held,
// whatever the heights, K blocks and column tails met on the way.
TEST_F(W4a16AmxRun, EveryChunkLeavesItsTilesReleased) {
  struct Restore {
    ~Restore() { SetParallelBackend(nullptr); }
  } restore;
  const LayerDesc desc =
      testing::KernelTestDesc(Mode::kW4A16, 300, 1024, 128, WeightType::kS4,
                              DType::kBF16, DType::kBF16, true);
  const CanonicalWeights w = testing::RandomWeights(desc, 80);
  const std::unique_ptr<Layer> layer = TilesLayer(desc, w, 1, 256);
  ASSERT_NE(layer, nullptr);
  auto backend = std::make_shared<TileCheckingBackend>();
  for (const int64_t m :
       {int64_t{20}, int64_t{40}, int64_t{70}, int64_t{100}}) {
    const auto x = testing::RandomActivations(desc, m, desc.k, 81);
    SetParallelBackend(nullptr);
    auto want = testing::RunToF32(*layer, m, x, desc.k);
    ASSERT_TRUE(want.ok()) << want.status();
    SetParallelBackend(backend);
    auto got = testing::RunToF32(*layer, m, x, desc.k);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, *want) << "m=" << m;
  }
  EXPECT_GT(backend->chunks.load(), 3);
  EXPECT_EQ(backend->held.load(), 0);
}

}  // namespace
}  // namespace w4jit
