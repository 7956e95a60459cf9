// The JIT activation quantizer must agree bit for bit with
// internal::QuantizeRowRef: qa, the per-group sums and the scale, for both
// activation dtypes, every K tail, any group size, and the edge rows
// (zeros, one huge value, denormals, exact ties, NaN / Inf anywhere); and
// under act-order (x read through a permutation table), against the
// reference on the permuted row; and with per-group scales (one sa per row
// and group, NaN / Inf confined to their group), plain and act-order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "jit/act_quantizer_generator.h"
#include "runtime/da8w4/da8w4_kernel_lookup.h"
#include "runtime/reference.h"
#include "tests/util/isa.h"

namespace w4jit::internal {
namespace {

struct Param {
  IsaTier isa;
  DType dtype;
};

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return absl::StrCat(info.param.isa == IsaTier::kAvx2 ? "Avx2" : "Avx512",
                      info.param.dtype == DType::kF32 ? "F32" : "Bf16");
}

// Rows of x in `dtype`, `ldx` elements apart.
class XBuffer {
 public:
  XBuffer(DType dtype, int64_t rows, int64_t ldx)
      : dtype_(dtype),
        ldx_(ldx),
        bytes_(static_cast<size_t>(rows * ldx) * DTypeSize(dtype)) {
    // Everything outside [0, K) of a row is NaN: reading it poisons sa.
    for (int64_t i = 0; i < rows * ldx; ++i) {
      StoreFromF32(bytes_.data(), dtype_, i,
                   std::numeric_limits<float>::quiet_NaN());
    }
  }
  void Set(int64_t row, int64_t col, float v) {
    StoreFromF32(bytes_.data(), dtype_, row * ldx_ + col, v);
  }
  const void* Row(int64_t row) const {
    return bytes_.data() + row * ldx_ * DTypeSize(dtype_);
  }
  int64_t ldx_bytes() const {
    return ldx_ * static_cast<int64_t>(DTypeSize(dtype_));
  }

 private:
  DType dtype_;
  int64_t ldx_;
  std::vector<uint8_t> bytes_;
};

// The edge rows every shape is tested with (row r of `rows`).
float EdgeValue(int row, int64_t col, int64_t k, std::mt19937* rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  switch (row) {
    case 0:
      return normal(*rng);
    case 1:
      return 1000.0f * normal(*rng);
    case 2:
      return 0.0f;  // all zeros
    case 3:
      return col == k / 2 ? 3.0e38f : normal(*rng);  // one huge value
    case 4:
      return 1.0e-40f * static_cast<float>(col % 7 - 3);  // denormals
    case 5:
      // amax = 127 makes sa exactly 1: every x.5 is a tie.
      if (col == 0) return 127.0f;
      return static_cast<float>(col % 9) - 4.5f;
    case 6:
      return col == k - 1 ? std::numeric_limits<float>::quiet_NaN()
                          : normal(*rng);  // NaN in the tail
    case 7:
      return col == 0 ? -std::numeric_limits<float>::infinity() : normal(*rng);
    case 8:
      return col == k - 1 ? std::numeric_limits<float>::infinity() : 0.5f;
    case 9:
      return col == k - 1 ? -50.0f : normal(*rng);  // amax in the tail
    case 10:
      return -0.0f;
    case 11:
      return std::numeric_limits<float>::max() * (col % 2 ? 1.0f : -1.0f);
    default:
      return 1.0e-3f * normal(*rng);
  }
}
constexpr int kEdgeRows = 13;

// A random permutation of [0, k) (act-order: the quantizer does not care
// which channels share a group), padded as ActQuantArgs::k_perm needs.
std::vector<int32_t> RandomPermTable(int64_t k, uint32_t seed) {
  std::vector<int32_t> perm(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) perm[i] = static_cast<int32_t>(i);
  std::mt19937 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  perm.resize(perm.size() + kActOrderTablePad, 0);
  return perm;
}

void CheckShape(IsaTier isa, DType dtype, int64_t k, int64_t group,
                bool permuted = false, uint32_t perm_seed = 0,
                bool per_group = false) {
  SCOPED_TRACE(absl::StrCat("k=", k, " group=", group,
                            permuted ? " act-order" : "",
                            per_group ? " per-group" : ""));
  ActQuantConfig config;
  config.isa = isa;
  config.act_dtype = dtype;
  config.k = k;
  config.group_size = group;
  config.permuted = permuted;
  config.per_group = per_group;
  const std::vector<int32_t> table =
      permuted ? RandomPermTable(
                     k, static_cast<uint32_t>(k + 7 * group) + 1000 * perm_seed)
               : std::vector<int32_t>();
  const std::vector<int32_t> k_perm(table.begin(),
                                    table.begin() + (permuted ? k : 0));
  auto gen = GetActQuantizer(config);
  ASSERT_TRUE(gen.ok()) << gen.status();

  const int64_t rows = kEdgeRows;
  const int64_t ldx = k + 5;
  const int64_t groups = k / group;
  XBuffer x(dtype, rows, ldx);
  std::mt19937 rng(static_cast<uint32_t>(k * 131 + group));
  for (int r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < k; ++c) x.Set(r, c, EdgeValue(r, c, k, &rng));
  }
  const int64_t ldqa = QaRowStride(k);
  const int64_t ldsums = SumsRowStride(groups) / 4;
  const int64_t ldsa = SaRowStride(groups, per_group) / 4;
  // Garbage everywhere so that unwritten bytes show up.
  std::vector<int8_t> qa(static_cast<size_t>(rows * ldqa), 0x5A);
  std::vector<float> sa(static_cast<size_t>(rows * ldsa), -1.0f);
  std::vector<int32_t> sums(static_cast<size_t>(rows * ldsums), 0x5A5A5A5A);
  ActQuantArgs args{x.Row(0),  x.ldx_bytes(), rows,        qa.data(),
                    sa.data(), sums.data(),   table.data()};
  (*gen)->entry<ActQuantFn>()(&args);

  for (int r = 0; r < rows; ++r) {
    SCOPED_TRACE(absl::StrCat("row ", r));
    std::vector<uint8_t> permuted_row;
    const QuantizedRow want =
        QuantizeRowRef(ActOrderRow(x.Row(r), dtype, k_perm, &permuted_row),
                       dtype, k, group, per_group);
    const std::vector<float> want_sa =
        per_group ? want.group_scales : std::vector<float>{want.scale};
    for (size_t g = 0; g < want_sa.size(); ++g) {
      const float got = sa[r * ldsa + g];
      if (std::isnan(want_sa[g])) {
        EXPECT_TRUE(std::isnan(got)) << "scale " << g << ": " << got;
      } else {
        EXPECT_EQ(std::memcmp(&want_sa[g], &got, 4), 0)
            << "scale " << g << ": " << want_sa[g] << " vs " << got;
      }
    }
    const int8_t* got_qa = qa.data() + r * ldqa;
    for (int64_t c = 0; c < k; ++c) {
      ASSERT_EQ(want.qa[c], got_qa[c]) << "col " << c;
    }
    for (int64_t c = k; c < (k + 3) / 4 * 4; ++c) {
      ASSERT_EQ(got_qa[c], 0) << "padding col " << c;
    }
    for (int64_t g = 0; g < groups; ++g) {
      ASSERT_EQ(want.group_sums[g], sums[r * ldsums + g]) << "group " << g;
    }
  }
}

class ActQuantizerTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(GetParam().isa)) {
      GTEST_SKIP() << testing::WhyCannotRunTier(GetParam().isa)
                   << ": the kernel is generated (see "
                      "ActQuantizerGeneration) but cannot run here";
    }
  }
};

TEST_P(ActQuantizerTest, PerChannelEveryTail) {
  for (int64_t k : {1,  2,  3,  4,  5,  7,   8,   9,   15,   16,
                    17, 31, 32, 33, 63, 100, 127, 129, 1000, 4097}) {
    CheckShape(GetParam().isa, GetParam().dtype, k, k);
  }
}

TEST_P(ActQuantizerTest, Groups) {
  struct Case {
    int64_t k, group;
  };
  for (const Case& c : std::vector<Case>{{128, 32},
                                         {256, 64},
                                         {512, 128},
                                         {1024, 256},
                                         {4096, 128},
                                         {96, 12},
                                         {100, 20},
                                         {60, 4},
                                         {48, 6},
                                         {42, 7},
                                         {99, 33},
                                         {64, 64},
                                         {40, 8},
                                         {36, 36},
                                         {200, 40},
                                         {1920, 48}}) {
    CheckShape(GetParam().isa, GetParam().dtype, c.k, c.group);
  }
}

// Act-order: every K tail and group shape again, x gathered through a
// random permutation (so k_perm[j] = 0, the lane bf16 treats apart, lands
// anywhere: full chunks, group tails, row tails).
TEST_P(ActQuantizerTest, ActOrderEveryTail) {
  for (int64_t k : {1, 2, 3, 5, 8, 9, 16, 17, 33, 100, 129, 1000, 4097}) {
    CheckShape(GetParam().isa, GetParam().dtype, k, k, /*permuted=*/true);
  }
}

TEST_P(ActQuantizerTest, ActOrderGroups) {
  for (auto [k, group] : std::vector<std::pair<int64_t, int64_t>>{{128, 32},
                                                                  {4096, 128},
                                                                  {96, 12},
                                                                  {100, 20},
                                                                  {60, 4},
                                                                  {42, 7},
                                                                  {99, 33},
                                                                  {40, 8},
                                                                  {200, 40},
                                                                  {1920, 48}}) {
    CheckShape(GetParam().isa, GetParam().dtype, k, group, /*permuted=*/true);
  }
  // Many positions of channel 0 within chunks and group tails (bf16
  // leaves it out of the gather and takes it from a register).
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    CheckShape(GetParam().isa, GetParam().dtype, 24, 12, /*permuted=*/true,
               seed);
  }
}

// Per-group scales: each group quantized with its own sa (group tails,
// groups shorter than a vector, NaN / Inf confined to one group).
TEST_P(ActQuantizerTest, PerGroupScales) {
  for (auto [k, group] : std::vector<std::pair<int64_t, int64_t>>{{128, 32},
                                                                  {4096, 128},
                                                                  {1024, 256},
                                                                  {96, 12},
                                                                  {100, 20},
                                                                  {60, 4},
                                                                  {48, 6},
                                                                  {42, 7},
                                                                  {99, 33},
                                                                  {40, 8},
                                                                  {200, 40},
                                                                  {1920, 48},
                                                                  {64, 64},
                                                                  {17, 17}}) {
    CheckShape(GetParam().isa, GetParam().dtype, k, group, /*permuted=*/false,
               0, /*per_group=*/true);
  }
}

TEST_P(ActQuantizerTest, PerGroupScalesActOrder) {
  for (auto [k, group] : std::vector<std::pair<int64_t, int64_t>>{
           {128, 32}, {4096, 128}, {100, 20}, {42, 7}, {200, 40}, {1920, 48}}) {
    CheckShape(GetParam().isa, GetParam().dtype, k, group, /*permuted=*/true, 0,
               /*per_group=*/true);
  }
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    CheckShape(GetParam().isa, GetParam().dtype, 24, 12, /*permuted=*/true,
               seed, /*per_group=*/true);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Isa, ActQuantizerTest,
    ::testing::Values(Param{IsaTier::kAvx2, DType::kBF16},
                      Param{IsaTier::kAvx2, DType::kF32},
                      Param{IsaTier::kAvx512Vnni, DType::kBF16},
                      Param{IsaTier::kAvx512Vnni, DType::kF32}),
    ParamName);

// The AVX-512 variant is generated (and so checked for encoding errors) on
// every machine, whether or not it can run here.
TEST(ActQuantizerGeneration, Avx512GeneratesForManyShapes) {
  for (DType dtype : {DType::kBF16, DType::kF32}) {
    for (int64_t k : {1, 7, 16, 33, 4096, 14336}) {
      for (int64_t group : {k, int64_t{1}}) {
        ActQuantConfig config{IsaTier::kAvx512Vnni, dtype, k, group};
        auto gen = GetActQuantizer(config);
        EXPECT_TRUE(gen.ok()) << gen.status();
      }
    }
    ActQuantConfig grouped{IsaTier::kAvx512Vnni, dtype, 4096, 128};
    EXPECT_TRUE(GetActQuantizer(grouped).ok());
    // Act-order (gathers) at both widths, with group and row tails.
    for (IsaTier isa : testing::Da8w4IsaTiers()) {
      for (auto [k, group] : std::vector<std::pair<int64_t, int64_t>>{
               {4096, 128}, {14336, 128}, {100, 20}, {33, 33}, {42, 7}}) {
        ActQuantConfig permuted{isa, dtype, k, group, /*permuted=*/true};
        auto gen = GetActQuantizer(permuted);
        ASSERT_TRUE(gen.ok()) << gen.status();
        EXPECT_NE((*gen)->name(),
                  (ActQuantConfig{isa, dtype, k, group}.name()));
      }
    }
  }
}

TEST(ActQuantizerGeneration, RejectsGroupNotDividingK) {
  ActQuantConfig config{IsaTier::kAvx2, DType::kF32, 100, 30};
  EXPECT_FALSE(GetActQuantizer(config).ok());
}

TEST(ActQuantizerGeneration, NameSaysWhatItIs) {
  ActQuantConfig config{IsaTier::kAvx2, DType::kBF16, 4096, 128};
  auto gen = GetActQuantizer(config);
  ASSERT_TRUE(gen.ok());
  EXPECT_EQ((*gen)->name(), config.name());
  EXPECT_NE((*gen)->name().find("quant"), std::string::npos);
  EXPECT_NE((*gen)->name().find("avx2"), std::string::npos);
  config.per_group = true;
  auto grouped = GetActQuantizer(config);
  ASSERT_TRUE(grouped.ok());
  EXPECT_NE((*grouped)->name(), (*gen)->name());
  EXPECT_NE((*grouped)->name().find("_agroup"), std::string::npos);
}

}  // namespace
}  // namespace w4jit::internal
