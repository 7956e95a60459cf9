// The W4A16 JIT path through the public Layer API, against the reference:
// both kernel paths (int4 kernel for small M, dequantize + panel for large
// M), every group kind, s4/u4, bf16/f32 in and out, bias, strides, tails,
// thread counts, forced parameters; AVX-512 code generated (and run where
// the CPU has it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "jit/w4a16_dequant_generator.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_panel_generator.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/layer_case.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

namespace w4jit {
namespace {

using internal::Flavor;
using internal::IsaTier;
using internal::KernelFamily;
using internal::ScopedIsaCap;
using internal::ScopedW4a16ParamsOverride;
using internal::W4a16Params;
using testing::CanRunTier;
using testing::Describe;
using testing::KernelNameIs;
using testing::MakeLayer;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunAndCheck;
using testing::RunToF32;
using testing::WhyCannotRunTier;

LayerDesc Desc(int64_t n, int64_t k, int64_t group, WeightType type, DType act,
               DType out, bool bias) {
  return testing::KernelTestDesc(Mode::kW4A16, n, k, group, type, act, out,
                                 bias);
}

// A W4A16 case named field by field (tests/util/layer_case.h).
testing::LayerCase W4a16() { return testing::LayerCase(Mode::kW4A16); }

// Restores the thread count at scope exit.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) { SetNumThreads(n); }
  ~ScopedThreads() { SetNumThreads(0); }
};

// Creates the layer, checks it runs on a JIT kernel for ISA suffix `isa`
// of `flavour` (any if empty), and checks each M against the reference.
void CheckLayer(const LayerDesc& desc, const std::vector<int64_t>& ms,
                int64_t ldx_pad = 0, int64_t ldy_pad = 0,
                std::string_view isa = "avx2", std::string_view flavour = "") {
  SCOPED_TRACE(Describe(desc));
  const auto w =
      RandomWeights(desc, static_cast<uint32_t>(desc.n * 7 + desc.k));
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const std::vector<std::string> names = (*layer)->kernel_names();
  ASSERT_FALSE(names.empty());
  // A W4A16 kernel of whichever path the regime runs first.
  EXPECT_EQ(names[0].rfind("w4a16", 0), 0u) << names[0];
  EXPECT_TRUE(KernelNameIs(names[0], flavour, isa));
  const int64_t ldx = desc.k + ldx_pad, ldy = desc.n + ldy_pad;
  for (int64_t m : ms) {
    SCOPED_TRACE("M = " + std::to_string(m));
    const auto x = RandomActivations(desc, m, ldx, static_cast<uint32_t>(m));
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy));
  }
}

// Every weight of `w` at its zero point: u = z, so w = (u - z) * s = 0.
void SetEveryNibbleToItsZeroPoint(internal::CanonicalWeights* w) {
  for (int64_t n = 0; n < w->n; ++n) {
    for (int64_t k = 0; k < w->k; ++k) {
      w->u[n * w->k + k] = w->Z(n, k / w->group_size);
    }
  }
}

class W4a16Avx2 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(IsaTier::kAvx2)) {
      GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx2);
    }
  }
  // Runs every test on the AVX2 path, even on AVX-512 machines.
  ScopedIsaCap cap_{IsaTier::kAvx2};
};

// The edge cases every path runs (tests/util/isa.h's IsaPaths): each
// path's tier, flavour and vector width forced; paths the CPU lacks skip.
class W4a16Path : public ::testing::TestWithParam<testing::IsaPath> {
 protected:
  void SetUp() override {
    const testing::IsaPath path = GetParam();
    if (!testing::StartIsaPathRun(path)) {
      GTEST_SKIP() << WhyCannotRunTier(path.tier);
    }
    cap_ = std::make_unique<ScopedIsaCap>(path.tier);
    params_ =
        std::make_unique<ScopedW4a16ParamsOverride>([path](W4a16Params* p) {
          p->flavor = path.flavor;
          p->vector_bits = path.vector_bits;
        });
  }
  // CheckLayer on this path's kernels: the bf16-dot flavour takes layers
  // with bf16 x and groups of whole k octets, the others run the tier's
  // FMA kernels.
  void Check(const LayerDesc& desc, const std::vector<int64_t>& ms,
             int64_t ldx_pad = 0, int64_t ldy_pad = 0) {
    const testing::IsaPath& path = GetParam();
    const int64_t group = desc.group_size == -1 ? desc.k : desc.group_size;
    const bool dot = path.flavor == Flavor::kBf16Dot &&
                     desc.act_dtype == DType::kBF16 && group % 8 == 0;
    // The f32-FMA code needs the vector width only (its least tier).
    const char* isa =
        dot ? path.suffix
            : internal::TraitsOf(internal::TraitsOf(path.tier).vector_tier)
                  .suffix;
    CheckLayer(desc, ms, ldx_pad, ldy_pad, isa, dot ? "bf16dot" : "fma");
  }

 private:
  std::unique_ptr<ScopedIsaCap> cap_;
  std::unique_ptr<ScopedW4a16ParamsOverride> params_;
};

TEST_P(W4a16Path, EveryMBothPaths) {
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 17; ++m) ms.push_back(m);
  ms.push_back(64);
  ms.push_back(255);
  Check(W4a16().N(72).K(256).Group(32).Bias(), ms, 3, 5);
  Check(W4a16().N(40).K(128).Group(64).U4().In(DType::kF32).Out(DType::kF32),
        ms);
}

TEST_P(W4a16Path, GroupsAndWeightTypes) {
  for (int64_t g : {int64_t{-1}, int64_t{32}, int64_t{64}, int64_t{128},
                    int64_t{256}, int64_t{6}, int64_t{34}}) {
    const int64_t k = g == -1 ? 512 : (g == 6 ? 132 : (g == 34 ? 340 : 512));
    for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
      Check(W4a16()
                .N(48)
                .K(k)
                .Group(g)
                .Weights(wt)
                .Out(DType::kF32)
                .Bias(g == 64),
            {1, 2, 3, 9, 20});
    }
  }
}

TEST_P(W4a16Path, DtypesBiasAndStrides) {
  for (DType act : {DType::kBF16, DType::kF32}) {
    for (DType out : {DType::kBF16, DType::kF32}) {
      for (bool bias : {false, true}) {
        Check(W4a16().N(37).K(192).Group(64).U4().In(act).Out(out).Bias(bias),
              {1, 4, 13}, bias ? 7 : 0, bias ? 0 : 9);
      }
    }
  }
}

TEST_P(W4a16Path, NTailsAndShortK) {
  // N below, at and across the 32-column block and the 16-column panel
  // tile; K equal to one group and shorter than a K block.
  for (int64_t n : {1, 5, 8, 13, 16, 31, 33, 100}) {
    Check(W4a16().N(n).K(64).Group(64).Bias(), {1, 3, 11}, 0, 2);
  }
  Check(W4a16().N(24).K(32).U4().In(DType::kF32), {1, 10});
}

TEST_P(W4a16Path, LargeK) {
  Check(W4a16().N(40).K(4096).Group(128).Out(DType::kF32).Bias(), {1, 9});
  Check(W4a16().N(17).K(4096).U4().In(DType::kF32), {2, 12});
}

INSTANTIATE_TEST_SUITE_P(Isa, W4a16Path,
                         ::testing::ValuesIn(testing::IsaPaths()),
                         testing::IsaPathName);

TEST_F(W4a16Avx2, ForcedParameters) {
  struct Case {
    const char* what;
    void (*edit)(W4a16Params*);
  };
  const Case cases[] = {
      {"int4 kernel for every M", [](W4a16Params* p) { p->gemm_min_m = 1000; }},
      {"panels for every M", [](W4a16Params* p) { p->gemm_min_m = 1; }},
      {"one-row int4 tiles", [](W4a16Params* p) { p->gemv_mr = 1; }},
      {"three-row int4 tiles",
       [](W4a16Params* p) {
         p->gemv_mr = 3;
         p->gemm_min_m = 1000;
       }},
      {"K blocks shorter than the group, small M blocks",
       [](W4a16Params* p) {
         p->kc = 48;
         p->mc = 6;
         p->gemm_min_m = 1;
       }},
      {"narrow panel tiles and blocks",
       [](W4a16Params* p) {
         p->block_vectors = 2;
         p->gemm_nr_vectors = 1;
         p->gemm_mr = 4;
         p->kc = 64;
         p->gemm_min_m = 2;
       }},
      {"tall 8 x 1 int4 tiles from M = 2",
       [](W4a16Params* p) {
         p->tall_mr = 8;
         p->tall_vectors = 1;
         p->tall_min_m = 2;
         p->gemm_min_m = 1000;
       }},
      {"tall 5 x 2 int4 tiles (all vectors decoded first), then panels",
       [](W4a16Params* p) {
         p->tall_mr = 5;
         p->tall_vectors = 2;
         p->tall_min_m = 3;
         p->gemm_min_m = 20;
       }},
      {"tall 3 x 2 int4 tiles (two chains per accumulator)",
       [](W4a16Params* p) {
         p->tall_mr = 3;
         p->tall_vectors = 2;
         p->tall_min_m = 2;
         p->gemm_min_m = 1000;
       }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ScopedW4a16ParamsOverride o(c.edit);
    CheckLayer(
        Desc(45, 384, 96, WeightType::kU4, DType::kBF16, DType::kBF16, true),
        {1, 2, 5, 14, 31});
    CheckLayer(
        Desc(19, 256, 32, WeightType::kS4, DType::kF32, DType::kF32, false),
        {1, 7, 19});
  }
}

TEST_F(W4a16Avx2, BitIdenticalAcrossThreadCounts) {
  const LayerDesc desc =
      Desc(200, 512, 128, WeightType::kU4, DType::kBF16, DType::kBF16, true);
  const auto w = RandomWeights(desc, 3);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  for (int64_t m : {1, 5, 40}) {
    const auto x = RandomActivations(desc, m, desc.k, 4);
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 3}) {
      ScopedThreads t(threads);
      auto y = RunToF32(**layer, m, x, desc.k);
      ASSERT_TRUE(y.ok()) << y.status();
      results.push_back(*y);
    }
    EXPECT_EQ(results[0], results[1]) << "M = " << m;
    EXPECT_EQ(results[0], results[2]) << "M = " << m;
  }
}

// The int4 kernel's tiles all add the same products in the same order
// (one chain per accumulator when the tallest tile has 8 or more): a row's
// result is the same bits whichever tile height, tile width, row position
// or thread count computes it.
struct Int4Tile {
  const char* what;
  int tall_mr, tall_vectors;
};

// Runs one layer at M = 23 with each tall tile (from 2 rows on, no
// panels) on 1..3 threads, and single rows on the short tile: every run
// must give the first one's bits.
void CheckInt4TilesBitIdentical(const std::vector<Int4Tile>& tiles,
                                int vector_bits) {
  const LayerDesc desc =
      Desc(75, 384, 128, WeightType::kU4, DType::kBF16, DType::kF32, true);
  const auto w = RandomWeights(desc, 21);
  const int64_t m = 23;
  const auto x = RandomActivations(desc, m, desc.k, 22);
  std::vector<float> first;
  for (const Int4Tile& t : tiles) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(absl::StrCat(t.what, ", ", threads, " thread(s)"));
      ScopedW4a16ParamsOverride o([t, vector_bits](W4a16Params* p) {
        p->flavor = Flavor::kF32Fma;
        p->vector_bits = vector_bits;
        p->tall_mr = t.tall_mr;
        p->tall_vectors = t.tall_vectors;
        p->tall_min_m = 2;
        p->gemm_min_m = 1000;
      });
      ScopedThreads th(threads);
      auto layer = MakeLayer(desc, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      auto y = RunToF32(**layer, m, x, desc.k);
      ASSERT_TRUE(y.ok()) << y.status();
      if (first.empty()) {
        first = *y;
        continue;
      }
      EXPECT_EQ(*y, first);
      // One row alone (the short tile's 1-row tail) gives the same bits as
      // that row inside a tall tile.
      for (int64_t r : {0, 7, 22}) {
        const int64_t row_bytes = desc.k * 2;  // bf16
        std::vector<uint8_t> row(x.begin() + r * row_bytes,
                                 x.begin() + (r + 1) * row_bytes);
        auto y1 = RunToF32(**layer, 1, row, desc.k);
        ASSERT_TRUE(y1.ok()) << y1.status();
        EXPECT_TRUE(
            std::equal(y1->begin(), y1->end(), first.begin() + r * desc.n))
            << "row " << r;
      }
    }
  }
}

TEST_F(W4a16Avx2, Int4TilesBitIdenticalAcrossShapesAndThreads) {
  CheckInt4TilesBitIdentical({{"2 x 4 (gemv_mr)", 2, 4},
                              {"8 x 1", 8, 1},
                              {"5 x 2", 5, 2},
                              {"4 x 2", 4, 2},
                              {"12 x 1", 12, 1}},
                             256);
}

// Row counts around the hand-over (int4 kernel below gemm_min_m, panels
// from it), around every multiple of the 6-row panel tile, at and past the
// 96-row M block (uneven blocks: 100 = 54 + 46), with N tails of the
// 32-column block and the 16-column panel tile, K = one group, and u4
// zero points, on the default parameters and on forced small tiles.
TEST_F(W4a16Avx2, MTailsAroundHandoverAndTileHeights) {
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 26; ++m) ms.push_back(m);
  for (int64_t m :
       {29, 30, 31, 35, 36, 37, 47, 48, 49, 63, 64, 65, 95, 96, 97, 100, 193}) {
    ms.push_back(m);
  }
  const struct {
    const char* what;
    void (*edit)(W4a16Params*);
  } cases[] = {
      {"defaults", [](W4a16Params*) {}},
      {"hand-over at 8, 4-row tiles, 2 K blocks, 20-row M blocks",
       [](W4a16Params* p) {
         p->gemm_min_m = 8;
         p->gemm_mr = 4;
         p->kc = 64;
         p->mc = 20;
       }},
      {"tall 8 x 1 int4 tiles from 4 rows, panels from 33",
       [](W4a16Params* p) {
         p->tall_mr = 8;
         p->tall_vectors = 1;
         p->tall_min_m = 4;
         p->gemm_min_m = 33;
       }},
      {"tall 5 x 2 int4 tiles from 8 rows, panels from 65",
       [](W4a16Params* p) {
         p->tall_mr = 5;
         p->tall_vectors = 2;
         p->tall_min_m = 8;
         p->gemm_min_m = 65;
       }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    ScopedW4a16ParamsOverride o(c.edit);
    // K = group (one group, 128 = two K blocks at kc 64), u4 zero points,
    // a 5-column tail past 32-column blocks.
    CheckLayer(
        Desc(37, 128, 128, WeightType::kU4, DType::kBF16, DType::kBF16, true),
        ms, 2, 3);
    // Per-channel s4, f32 in and out, a 9-column tail of a panel tile.
    CheckLayer(
        Desc(25, 192, -1, WeightType::kS4, DType::kF32, DType::kF32, false),
        {1, 7, 8, 9, 10, 11, 12, 13, 17, 18, 19, 64, 65});
  }
}

// Every ISA tier this machine has, forced: the same layer on each agrees
// with the reference on both paths.
TEST(W4a16Tiers, EveryTierTheMachineHas) {
  for (IsaTier tier : testing::IsaTiersWithRef()) {
    if (!testing::StartIsaRun(tier)) continue;
    SCOPED_TRACE(internal::ToString(tier));
    ScopedIsaCap cap(tier);
    const LayerDesc desc =
        Desc(70, 256, 64, WeightType::kU4, DType::kBF16, DType::kBF16, true);
    const auto w = RandomWeights(desc, 11);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const std::string name = (*layer)->kernel_names()[0];
    if (tier == IsaTier::kRef) {
      EXPECT_EQ(name.rfind("reference", 0), 0u) << name;
    } else {
      EXPECT_EQ(name.rfind("w4a16_", 0), 0u) << name;
    }
    for (int64_t m : {1, 9, 10, 16, 40}) {
      const auto x = RandomActivations(desc, m, desc.k, 12);
      EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n)) << m;
    }
  }
}

// The panel path computes every output by the same FMAs in k order
// whatever the thread count, row tile, M block, K block or panel tile
// width: results are bit-identical across all of them.
TEST_F(W4a16Avx2, PanelsBitIdenticalAcrossThreadsAndTiles) {
  const LayerDesc desc =
      Desc(100, 384, 128, WeightType::kU4, DType::kBF16, DType::kF32, true);
  const auto w = RandomWeights(desc, 21);
  const struct {
    const char* what;
    void (*edit)(W4a16Params*);
  } tilings[] = {
      {"defaults", [](W4a16Params* p) { p->gemm_min_m = 1; }},
      {"4-row tiles, 8-row M blocks",
       [](W4a16Params* p) {
         p->gemm_min_m = 1;
         p->gemm_mr = 4;
         p->mc = 8;
       }},
      {"K blocks of 64, one-vector tiles",
       [](W4a16Params* p) {
         p->gemm_min_m = 1;
         p->kc = 64;
         p->gemm_nr_vectors = 1;
         p->gemm_mr = 8;
       }},
      {"2-row tiles, 2-row M blocks",
       [](W4a16Params* p) {
         p->gemm_min_m = 1;
         p->gemm_mr = 2;
         p->mc = 2;
       }},
  };
  for (int64_t m : {1, 13, 40, 101}) {
    SCOPED_TRACE("M = " + std::to_string(m));
    const auto x = RandomActivations(desc, m, desc.k, 22);
    std::vector<float> first;
    for (const auto& t : tilings) {
      ScopedW4a16ParamsOverride o(t.edit);
      auto layer = MakeLayer(desc, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      for (int threads : {1, 2, 3, 5}) {
        SCOPED_TRACE(std::string(t.what) + ", " + std::to_string(threads) +
                     " threads");
        ScopedThreads th(threads);
        auto y = RunToF32(**layer, m, x, desc.k);
        ASSERT_TRUE(y.ok()) << y.status();
        if (first.empty()) {
          first = *y;
          EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n));
        } else {
          ASSERT_EQ(*y, first);
        }
      }
    }
  }
}

TEST_F(W4a16Avx2, AllowBf16ComputeStaysF32OnAvx2) {
  LayerDesc desc =
      Desc(33, 128, 32, WeightType::kS4, DType::kF32, DType::kF32, false);
  desc.allow_bf16_compute = true;
  CheckLayer(desc, {1, 12}, 0, 0, "avx2", "fma");
}

TEST_F(W4a16Avx2, SpecialActivationsAndZeroWeights) {
  // x: NaN in row 1, Inf in row 2, tiny (bf16 subnormal, and below 2^-122
  // where x / 16 needs care) and huge magnitudes in row 3; both paths.
  for (int64_t min_m : {int64_t{1}, int64_t{1000}}) {
    ScopedW4a16ParamsOverride o(
        [min_m](W4a16Params* p) { p->gemm_min_m = min_m; });
    for (DType act : {DType::kBF16, DType::kF32}) {
      const LayerDesc desc =
          Desc(40, 64, 32, WeightType::kU4, act, DType::kF32, true);
      SCOPED_TRACE(Describe(desc));
      const auto w = RandomWeights(desc, 9);
      auto layer = MakeLayer(desc, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      auto x = RandomActivations(desc, 4, desc.k, 10);
      testing::SetActivation(desc, &x, desc.k, 1, 5, std::nanf(""));
      testing::SetActivation(desc, &x, desc.k, 2, 7, INFINITY);
      testing::SetActivation(desc, &x, desc.k, 3, 1, 3e-39f);
      testing::SetActivation(desc, &x, desc.k, 3, 3, 1.5e-37f);
      testing::SetActivation(desc, &x, desc.k, 3, 9, 1e20f);
      EXPECT_TRUE(RunAndCheck(**layer, w, 4, x, desc.k, desc.n));
    }
  }
  // All weights at the zero point: y is exactly the bias.
  const LayerDesc desc =
      Desc(24, 128, 64, WeightType::kU4, DType::kBF16, DType::kF32, true);
  auto w = RandomWeights(desc, 4);
  SetEveryNibbleToItsZeroPoint(&w);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  for (int64_t m : {1, 12}) {
    const auto x = RandomActivations(desc, m, desc.k, 6);
    auto y = RunToF32(**layer, m, x, desc.k);
    ASSERT_TRUE(y.ok()) << y.status();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < desc.n; ++j) {
        ASSERT_EQ((*y)[i * desc.n + j], w.bias[j]) << i << "," << j;
      }
    }
  }
}

TEST_F(W4a16Avx2, KernelNames) {
  const LayerDesc desc =
      Desc(64, 256, 128, WeightType::kS4, DType::kBF16, DType::kBF16, true);
  auto layer = MakeLayer(desc, RandomWeights(desc, 1));
  ASSERT_TRUE(layer.ok()) << layer.status();
  const std::vector<std::string> names = (*layer)->kernel_names();
  // int4 kernels (short and tall tiles), dequantizer, panel tile.
  ASSERT_EQ(names.size(), 4u);
  // The int4 tiles come from this CPU class's defaults for the AVX2 tier;
  // a tall tile narrower than the block says its width in the flags. The
  // bf16 scales are stored as bf16 ("_mbf16", w4a16_meta_test.cc), and the
  // class's software prefetch distance, if it has one, is named ("_pf").
  const W4a16Params p =
      internal::DefaultW4a16Params(internal::HostCpu(), IsaTier::kAvx2);
  EXPECT_EQ(names[0],
            absl::StrCat("w4a16_s4_g128_n64_k256_m", p.gemv_mr, "x",
                         p.block_vectors * p.vector_bits / 32,
                         "_f32tobf16_fma_bias_mbf16",
                         p.prefetch_distance > 0
                             ? absl::StrCat("_pf", p.prefetch_distance)
                             : "",
                         "__avx2"));
  EXPECT_EQ(names[1].rfind(
                absl::StrCat("w4a16_s4_g128_n64_k256_m", p.tall_mr, "x"), 0),
            0u)
      << names[1];
  EXPECT_EQ(names[2].rfind("w4a16dq_s4_g128", 0), 0u) << names[2];
  EXPECT_EQ(names[3].rfind("w4a16panel_", 0), 0u) << names[3];
}

TEST_F(W4a16Avx2, OddGroupRunsTheReferenceAndSaysWhy) {
  for (const LayerDesc& desc :
       {Desc(16, 40, 5, WeightType::kS4, DType::kBF16, DType::kF32, false),
        Desc(16, 33, -1, WeightType::kU4, DType::kF32, DType::kF32, true)}) {
    SCOPED_TRACE(Describe(desc));
    const auto w = RandomWeights(desc, 2);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const std::vector<std::string> names = (*layer)->kernel_names();
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind("reference_w4a16", 0), 0u) << names[0];
    EXPECT_NE(names[0].find("odd"), std::string::npos) << names[0];
    const auto x = RandomActivations(desc, 3, desc.k, 5);
    EXPECT_TRUE(RunAndCheck(**layer, w, 3, x, desc.k, desc.n));
  }
}

TEST_F(W4a16Avx2, BadParametersFallBackWithAReason) {
  const W4a16Params base;
  absl::StatusOr<W4a16Params> p = internal::ApplyW4a16Params(
      {{"kc", 512}, {"gemv_mr", 3}}, base, IsaTier::kAvx2);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kc, 512);
  EXPECT_EQ(p->gemv_mr, 3);
  EXPECT_FALSE(
      internal::ApplyW4a16Params({{"flavor", 7}}, base, IsaTier::kAvx2).ok());
  EXPECT_FALSE(
      internal::ApplyW4a16Params({{"mr", 2}}, base, IsaTier::kAvx2).ok());

  const LayerDesc desc =
      Desc(32, 64, 32, WeightType::kS4, DType::kBF16, DType::kF32, false);
  for (auto edit : {+[](W4a16Params* q) { q->gemm_nr_vectors = 3; },
                    +[](W4a16Params* q) { q->gemv_mr = 9; },
                    +[](W4a16Params* q) { q->vector_bits = 384; }}) {
    ScopedW4a16ParamsOverride o(edit);
    const auto w = RandomWeights(desc, 1);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const std::vector<std::string> names = (*layer)->kernel_names();
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind("reference_w4a16 (", 0), 0u) << names[0];
    const auto x = RandomActivations(desc, 2, desc.k, 3);
    EXPECT_TRUE(RunAndCheck(**layer, w, 2, x, desc.k, desc.n));
  }
}

// zmm FMA kernels: executed only where the CPU has AVX-512.
TEST(W4a16Avx512, F32FmaRuns) {
  if (!testing::StartIsaRun(IsaTier::kAvx512Vnni)) {
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx512Vnni)
                 << ": zmm kernels are only generated (W4a16Avx512Generation)";
  }
  ScopedIsaCap cap(IsaTier::kAvx512Vnni);
  ScopedW4a16ParamsOverride o([](W4a16Params* p) {
    p->flavor = Flavor::kF32Fma;
    p->vector_bits = 512;
  });
  CheckLayer(
      Desc(150, 384, 128, WeightType::kU4, DType::kBF16, DType::kBF16, true),
      {1, 2, 5, 8, 12, 15, 17, 40}, 3, 2, "avx512vnni", "fma");
  CheckLayer(Desc(9, 96, 6, WeightType::kS4, DType::kF32, DType::kF32, false),
             {1, 3, 20}, 0, 0, "avx512vnni", "fma");
}

TEST(W4a16Avx512, Int4TilesBitIdenticalAcrossShapesAndThreads) {
  if (!CanRunTier(IsaTier::kAvx512Vnni)) {
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx512Vnni)
                 << ": zmm kernels are only generated (W4a16Avx512Generation)";
  }
  ScopedIsaCap cap(IsaTier::kAvx512Vnni);
  CheckInt4TilesBitIdentical({{"12 x 2 (default tall)", 12, 2},
                              {"4 x 4 (gemv_mr)", 4, 4},
                              {"8 x 2", 8, 2},
                              {"24 x 1", 24, 1}},
                             512);
}

TEST(W4a16Avx512, Bf16DotRuns) {
  if (!testing::StartIsaRun(IsaTier::kAvx512Bf16)) {
    GTEST_SKIP() << WhyCannotRunTier(IsaTier::kAvx512Bf16)
                 << ": the bf16-dot flavour is only generated "
                    "(W4a16Avx512Generation)";
  }
  ScopedW4a16ParamsOverride o([](W4a16Params* p) {
    p->flavor = Flavor::kBf16Dot;
    p->vector_bits = 512;
  });
  // With and without bias ("_bias" stands between flavour and ISA).
  for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
    CheckLayer(Desc(150, 384, 128, wt, DType::kBF16, DType::kBF16, true),
               {1, 2, 5, 8, 12, 13, 17, 25, 40}, 3, 2, "avx512bf16", "bf16dot");
    LayerDesc f32 = Desc(70, 256, -1, wt, DType::kF32, DType::kF32, false);
    f32.allow_bf16_compute = true;
    CheckLayer(f32, {1, 9}, 0, 0, "avx512bf16", "bf16dot");
  }
  // u4 weights all at their zero points: the packing folds z into a
  // (8 - z) * s * sum x correction, which cancels the group's dot product
  // only to f32 rounding (not exactly, as the AVX2 path's u - z does); the
  // tolerance counts the correction's terms (layer_check.h). The layer
  // fuzzer found this with AWQ rows whose nibbles all equal z.
  const LayerDesc desc =
      Desc(48, 256, 32, WeightType::kU4, DType::kBF16, DType::kF32, false);
  auto w = RandomWeights(desc, 4);
  SetEveryNibbleToItsZeroPoint(&w);
  // Scales of 2^4..2^8 (exact): the rounding then exceeds the absolute
  // 1e-6 floor, so only the fold term of the tolerance can cover it.
  for (float& s : w.scales) s = std::ldexp(s, 12);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_TRUE(
      KernelNameIs((*layer)->kernel_names()[0], "bf16dot", "avx512bf16"));
  for (int64_t m : {1, 7}) {
    const auto x = RandomActivations(desc, m, desc.k, 6);
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n));
  }
}

// Generation of the AVX-512 variants on any machine: the code must
// assemble (no Xbyak error, no unresolved label) for several shapes.
TEST(W4a16Avx512Generation, EveryFamilyAndFlavourAssembles) {
  for (Flavor flavor : {Flavor::kF32Fma, Flavor::kBf16Dot}) {
    for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
      // u4 layers fold their zero points for the dot flavour (s4 keys).
      if (flavor == Flavor::kBf16Dot && wt == WeightType::kU4) continue;
      for (DType out : {DType::kF32, DType::kBF16}) {
        for (int mr : {1, 2, 4, 6, 12}) {
          internal::W4a16GemvConfig c;
          c.isa = flavor == Flavor::kBf16Dot ? IsaTier::kAvx512Bf16
                                             : IsaTier::kAvx512Vnni;
          c.flavor = flavor;
          c.out_dtype = out;
          c.weight_type = wt;
          c.group_size = mr == 4 ? 4096 : 128;
          c.per_channel = mr == 4;
          c.n = 100 + mr;  // a tail block
          c.k = 4096;
          c.mr = mr;
          c.nr = 64;
          c.bias = mr % 2 == 0;
          // The tall tile of the defaults: 12 rows x 2 of the 4 vectors.
          if (mr == 12) c.tile_vectors = 2;
          // s4 scales stored as f32, bf16 or f16 (w4a16_layout.h).
          if (wt == WeightType::kS4 && mr > 1) {
            c.meta_dtype = mr % 4 == 0 ? DType::kF16 : DType::kBF16;
          }
          // u4 folded into float zero points (the dot flavour's u4).
          if (flavor == Flavor::kBf16Dot && (mr == 2 || mr == 12)) {
            c.float_zero = c.folded_zero = true;
          }
          SCOPED_TRACE(c.name());
          ASSERT_TRUE(internal::CheckW4a16GemvConfig(c).ok());
          internal::W4a16GemvGenerator gen(c);
          EXPECT_TRUE(gen.Create().ok());
        }
      }
      if (flavor != Flavor::kF32Fma) continue;
      internal::W4a16DequantConfig dq;
      dq.isa = IsaTier::kAvx512Vnni;
      dq.weight_type = wt;
      dq.group_size = 6;
      dq.nr = 64;
      dq.segment = 6;
      for (DType meta : {DType::kF32, DType::kBF16, DType::kF16}) {
        dq.meta_dtype = meta;
        if (meta != DType::kF32 && wt == WeightType::kU4) {
          // Integer zero points are 32-bit integers in the meta.
          EXPECT_FALSE(internal::CheckW4a16DequantConfig(dq).ok());
          continue;
        }
        ASSERT_TRUE(internal::CheckW4a16DequantConfig(dq).ok());
        internal::W4a16DequantGenerator dgen(dq);
        EXPECT_TRUE(dgen.Create().ok()) << dgen.name();
      }
    }
  }
  for (DType out : {DType::kF32, DType::kBF16}) {
    for (int64_t n : {64, 37}) {
      internal::W4a16PanelConfig p;
      p.isa = IsaTier::kAvx512Vnni;
      p.out_dtype = out;
      p.mr = 6;
      p.nr = 64;
      p.stride = 64;
      p.n = n;
      p.bias = true;
      ASSERT_TRUE(internal::CheckW4a16PanelConfig(p).ok());
      internal::W4a16PanelGenerator gen(p);
      EXPECT_TRUE(gen.Create().ok()) << gen.name();
    }
  }
}

// The whole layer for AVX-512 (packing, keys, every kernel the layer would
// run), built but not run.
TEST(W4a16Avx512Generation, LayersBuildForBothFlavours) {
  for (Flavor flavor : {Flavor::kF32Fma, Flavor::kBf16Dot}) {
    for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
      const LayerDesc desc = Desc(100, 512, 128, wt, DType::kBF16, DType::kBF16,
                                  wt == WeightType::kU4);
      const auto w = RandomWeights(desc, 5);
      W4a16Params p = internal::DefaultW4a16Params(internal::HostCpu(),
                                                   IsaTier::kAvx512Bf16);
      p.flavor = flavor;
      std::string why;
      auto kernel = internal::MakeW4a16JitKernel(desc, w, internal::HostCpu(),
                                                 IsaTier::kAvx512Bf16, p, &why);
      ASSERT_TRUE(kernel.ok()) << kernel.status();
      ASSERT_NE(*kernel, nullptr) << why;
      const std::vector<std::string> names = (*kernel)->kernel_names();
      ASSERT_FALSE(names.empty());
      EXPECT_TRUE(flavor == Flavor::kBf16Dot
                      ? KernelNameIs(names[0], "bf16dot", "avx512bf16")
                      : KernelNameIs(names[0], "fma", "avx512vnni"));
      EXPECT_EQ(names[0].find("_bias_") != std::string::npos, desc.has_bias)
          << names[0];
      // int4 kernels with short and tall tiles, and for the FMA flavour the
      // dequantizer and panel tiles (100 columns leave a 36-column tail).
      EXPECT_EQ(names.size(), flavor == Flavor::kBf16Dot ? 2u : 5u);
    }
  }
}

TEST(W4a16Avx512Generation, RegisterBudgetIsChecked) {
  internal::W4a16GemvConfig c;
  c.isa = IsaTier::kAvx2;
  c.flavor = Flavor::kF32Fma;
  c.out_dtype = DType::kF32;
  c.group_size = 128;
  c.n = 64;
  c.k = 256;
  c.nr = 32;
  c.mr = 3;
  EXPECT_TRUE(internal::CheckW4a16GemvConfig(c).ok());
  c.mr = 4;  // 16 accumulators + temporaries > 16 ymm
  EXPECT_FALSE(internal::CheckW4a16GemvConfig(c).ok());
  // Tall tiles of fewer vectors than the block.
  c.tile_vectors = 1;
  c.mr = 13;  // 13 accumulators, 2 decoded, 1 broadcast
  EXPECT_TRUE(internal::CheckW4a16GemvConfig(c).ok());
  c.mr = 14;
  EXPECT_FALSE(internal::CheckW4a16GemvConfig(c).ok());
  c.mr = 2;
  c.tile_vectors = 3;  // 3 does not divide 4
  EXPECT_FALSE(internal::CheckW4a16GemvConfig(c).ok());
  c.tile_vectors = 0;
  c.isa = IsaTier::kAvx512Vnni;
  c.nr = 64;
  c.mr = 7;
  EXPECT_TRUE(internal::CheckW4a16GemvConfig(c).ok());
  c.flavor = Flavor::kBf16Dot;  // needs AVX512_BF16
  EXPECT_FALSE(internal::CheckW4a16GemvConfig(c).ok());
}

}  // namespace
}  // namespace w4jit
