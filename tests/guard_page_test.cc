// Tail shapes against PROT_NONE pages: x, y, the packed weights and every
// scratch buffer end (or start) exactly at an inaccessible page, so a
// kernel that reads or writes one byte past a tail faults instead of
// passing. Through the public Layer API on every JIT tier this CPU runs, so
// every kernel family a layer can use is covered (DA8W4 quantizer, GEMV and
// GEMM tiles; W4A16 int4, dequantize and panel kernels), including ones
// added later, as long as their buffers come from base/memory.h.
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/memory.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "tests/util/guard_pages.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::testing {
namespace {

using internal::IsaTier;

std::vector<IsaTier> JitTiers() {
  std::vector<IsaTier> tiers;
  for (const internal::IsaTraits& t : internal::kIsaTraits) {
    if (t.vector_bytes > 0 &&
        internal::HasFeaturesOf(internal::ActiveIsa(), t.tier)) {
      tiers.push_back(t.tier);
    }
  }
  return tiers;
}

// Every row count up to past the register tiles, the DA8W4 GEMV -> GEMM
// handover (16) and the W4A16 panel path (from 10 rows, tiles of 6, M
// blocks of 96), with tails of each.
const std::vector<int64_t> kRows = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                    11, 12, 13, 16, 17, 19, 31, 33, 97, 101};

struct Shape {
  int64_t n, k, group;
  WeightType type;
  DType act, out;
  bool bias;
};

// Grouped shapes with row, column and group tails (groups of 4 to 128,
// one of 12 and one of 20), s4/u4 and both dtypes: the act-order and the
// per-group activation-scale runs walk the same edges.
const std::vector<Shape>& GroupedTailShapes() {
  static const std::vector<Shape>* shapes = new std::vector<Shape>{
      {16, 36, 4, WeightType::kS4, DType::kBF16, DType::kBF16, false},
      {33, 96, 32, WeightType::kU4, DType::kF32, DType::kF32, true},
      {17, 60, 12, WeightType::kU4, DType::kBF16, DType::kF32, false},
      {65, 256, 128, WeightType::kS4, DType::kBF16, DType::kBF16, true},
      {8, 40, 20, WeightType::kS4, DType::kF32, DType::kBF16, false},
  };
  return *shapes;
}

// Runs every row count on `shape` with x, y and all library buffers flush
// against guard pages at `flush`; returns the kernels the layer ran.
// With `float_zero`, the u4 shape has float zero points (bf16 for bf16 x,
// f32 for f32 x).
std::string CheckShape(Mode mode, const Shape& s, Flush flush,
                       bool act_order = false,
                       ActQuant act_quant = ActQuant::kPerToken,
                       bool float_zero = false) {
  LayerDesc desc =
      KernelTestDesc(mode, s.n, s.k, s.group, s.type, s.act, s.out, s.bias);
  desc.act_quant = act_quant;
  if (float_zero) {
    desc.zero_point_domain = ZeroPointDomain::kFloat;
    desc.zero_point_dtype = s.act;
  }
  SCOPED_TRACE(absl::StrCat(Describe(desc), " ", ToString(flush)));
  GuardPageAllocator& guard = GuardPageAllocator::Instance();
  guard.set_flush(flush);
  internal::ScopedAllocatorHook hook(&guard);
  const int64_t before = guard.allocations();
  auto w = RandomWeights(desc, 7);
  // GPTQ act-order: x is gathered through a permutation (the quantizer's
  // table is a library buffer too).
  if (act_order) w.k_perm = RandomActOrder(desc, 9);
  auto layer = MakeLayer(desc, w);
  if (!layer.ok()) {
    ADD_FAILURE() << layer.status();
    return "";
  }
  const std::vector<std::string> names = (*layer)->kernel_names();
  EXPECT_NE(names[0].rfind("reference", 0), 0u)
      << "expected JIT kernels, got " << names[0];
  EXPECT_GT(guard.allocations(), before) << "packed weights bypassed the hook";
  const size_t xsize = internal::DTypeSize(desc.act_dtype);
  const size_t ysize = internal::DTypeSize(desc.out_dtype);
  for (int64_t m : kRows) {
    // ldx = K, ldy = N: the last row ends exactly at the guard page.
    const std::vector<uint8_t> host_x = RandomActivations(desc, m, s.k, 11);
    GuardedBuffer x(host_x.size(), flush, xsize);
    std::memcpy(x.data(), host_x.data(), host_x.size());
    GuardedBuffer y(static_cast<size_t>(m * s.n) * ysize, flush, ysize);
    const check::CheckResult r =
        check::CheckRun(**layer, w, m, x.data(), s.k, s.n, y.data());
    EXPECT_TRUE(r.ok()) << "m=" << m << ": " << r.report;
  }
  return absl::StrJoin(names, " ");
}

class GuardPageTest : public ::testing::TestWithParam<Flush> {};

TEST_P(GuardPageTest, Da8w4EveryTail) {
  const std::vector<IsaTier> tiers = JitTiers();
  if (tiers.empty()) GTEST_SKIP() << "no JIT tier (AVX2) on this CPU";
  // N around the 16/32-column blocks and multi-block tiles, K with every
  // remainder mod 4 (per-channel) and groups of 4, 32 and 128.
  const Shape shapes[] = {
      {1, 4, -1, WeightType::kS4, DType::kBF16, DType::kF32, false},
      {15, 7, -1, WeightType::kU4, DType::kF32, DType::kBF16, true},
      {16, 36, 4, WeightType::kS4, DType::kBF16, DType::kBF16, false},
      {17, 130, -1, WeightType::kU4, DType::kBF16, DType::kF32, true},
      {33, 96, 32, WeightType::kU4, DType::kF32, DType::kF32, false},
      {65, 256, 128, WeightType::kS4, DType::kBF16, DType::kBF16, true},
      {129, 101, -1, WeightType::kS4, DType::kF32, DType::kF32, false},
  };
  for (IsaTier tier : tiers) {
    internal::ScopedIsaCap cap(tier);
    std::string names;
    for (const Shape& s : shapes) {
      names += CheckShape(Mode::kDA8W4, s, GetParam()) + " ";
    }
    EXPECT_NE(names.find("quant_"), std::string::npos) << names;
    EXPECT_NE(names.find("da8w4_"), std::string::npos) << names;
  }
}

// Per-group activation scales: the quantizer's per-group passes and scale
// rows, the tiles' per-group scale loads; plain and act-order.
TEST_P(GuardPageTest, Da8w4PerGroupEveryTail) {
  const std::vector<IsaTier> tiers = JitTiers();
  if (tiers.empty()) GTEST_SKIP() << "no JIT tier (AVX2) on this CPU";
  const std::vector<Shape>& shapes = GroupedTailShapes();
  for (IsaTier tier : tiers) {
    internal::ScopedIsaCap cap(tier);
    std::string names;
    for (const bool act_order : {false, true}) {
      for (const Shape& s : shapes) {
        names += CheckShape(Mode::kDA8W4, s, GetParam(), act_order,
                            ActQuant::kPerGroup) +
                 " ";
      }
    }
    EXPECT_NE(names.find("_agroup"), std::string::npos) << names;
  }
}

TEST_P(GuardPageTest, W4a16EveryTail) {
  const std::vector<IsaTier> tiers = JitTiers();
  if (tiers.empty()) GTEST_SKIP() << "no JIT tier (AVX2) on this CPU";
  // N around the 32-column blocks and 16-column panels, even K and groups,
  // K past one 1024 K block.
  const Shape shapes[] = {
      {1, 2, -1, WeightType::kS4, DType::kBF16, DType::kF32, false},
      {8, 6, 2, WeightType::kU4, DType::kF32, DType::kBF16, true},
      {17, 30, 6, WeightType::kS4, DType::kBF16, DType::kBF16, true},
      {31, 64, -1, WeightType::kU4, DType::kF32, DType::kF32, false},
      {33, 128, 32, WeightType::kS4, DType::kBF16, DType::kF32, false},
      {50, 1030, -1, WeightType::kU4, DType::kBF16, DType::kBF16, true},
      {70, 2048, 128, WeightType::kU4, DType::kF32, DType::kF32, true},
  };
  for (IsaTier tier : tiers) {
    internal::ScopedIsaCap cap(tier);
    std::string names;
    for (const Shape& s : shapes) {
      names += CheckShape(Mode::kW4A16, s, GetParam()) + " ";
    }
    EXPECT_NE(names.find("w4a16_"), std::string::npos) << names;
    if (names.find("bf16dot") == std::string::npos) {
      // The f32 flavour's large-M path: dequantize + panel kernels (asked
      // of the layers built, not assumed from the tier: which flavour an
      // AVX512_BF16 tier runs is the CPU class's default).
      EXPECT_NE(names.find("w4a16dq_"), std::string::npos) << names;
      EXPECT_NE(names.find("w4a16panel_"), std::string::npos) << names;
    }
  }
}

// Float zero points (torchao's tinygemm form): the int4 kernel reads the
// group sums that follow each group of packed x, the dequantizer zf.
TEST_P(GuardPageTest, W4a16FloatZeroEveryTail) {
  const std::vector<IsaTier> tiers = JitTiers();
  if (tiers.empty()) GTEST_SKIP() << "no JIT tier (AVX2) on this CPU";
  const Shape shapes[] = {
      {8, 6, 2, WeightType::kU4, DType::kF32, DType::kBF16, true},
      {31, 64, -1, WeightType::kU4, DType::kBF16, DType::kF32, false},
      {64, 256, 128, WeightType::kU4, DType::kBF16, DType::kBF16, true},
      {70, 2048, 128, WeightType::kU4, DType::kF32, DType::kF32, true},
  };
  for (IsaTier tier : tiers) {
    internal::ScopedIsaCap cap(tier);
    std::string names;
    for (const Shape& s : shapes) {
      names += CheckShape(Mode::kW4A16, s, GetParam(), /*act_order=*/false,
                          ActQuant::kPerToken, /*float_zero=*/true) +
               " ";
    }
    EXPECT_NE(names.find("w4a16_s4fz_"), std::string::npos) << names;
  }
}

// GPTQ act-order, both modes: the DA8W4 quantizer's gathers (bf16 reads
// the dword ending at each x element, so the first and last elements of a
// row are the edge cases) and W4A16's permuted packing of x, with groups
// and row tails.
TEST_P(GuardPageTest, ActOrderEveryTail) {
  const std::vector<IsaTier> tiers = JitTiers();
  if (tiers.empty()) GTEST_SKIP() << "no JIT tier (AVX2) on this CPU";
  const std::vector<Shape>& shapes = GroupedTailShapes();
  for (IsaTier tier : tiers) {
    internal::ScopedIsaCap cap(tier);
    for (Mode mode : {Mode::kDA8W4, Mode::kW4A16}) {
      for (const Shape& s : shapes) {
        CheckShape(mode, s, GetParam(), /*act_order=*/true);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BothEnds, GuardPageTest,
                         ::testing::Values(Flush::kFront, Flush::kBack),
                         [](const ::testing::TestParamInfo<Flush>& info) {
                           return info.param == Flush::kFront ? "Front"
                                                              : "Back";
                         });

// The guard pages themselves: touching one byte past either end faults.
TEST(GuardedBufferDeathTest, OneBytePastEitherEndFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        GuardedBuffer b(100, Flush::kBack);
        static_cast<volatile char*>(b.data())[100] = 1;
      },
      "");
  EXPECT_DEATH(
      {
        GuardedBuffer b(100, Flush::kFront);
        static_cast<volatile char*>(b.data())[-1] = 1;
      },
      "");
  GuardedBuffer ok(100, Flush::kBack);
  static_cast<volatile char*>(ok.data())[99] = 1;  // the last byte is fine
}

}  // namespace
}  // namespace w4jit::testing
