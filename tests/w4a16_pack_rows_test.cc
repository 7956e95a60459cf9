// The f32 activation rows of the W4A16 kernels, element by element: the
// panels' plain rows and the int4 kernel's recombined pairs with their
// group slots (runtime/w4a16/w4a16_pack.h, jit/w4a16_layout.h).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "jit/w4a16_layout.h"
#include "runtime/w4a16/w4a16_pack.h"

namespace w4jit {
namespace {

using internal::F32Int4RowSlots;
using internal::F32Int4Slots;

constexpr int64_t kM = 3;
constexpr int64_t kK = 8;
constexpr int64_t kGroup = 4;
constexpr int kMr = 2;  // row groups of 2 and 1 rows

// x[m][k] = small values exact in f32 and bf16, distinct per element.
float X(int64_t m, int64_t k) {
  return static_cast<float>((m + 1) * 16 + k) * (k % 3 == 0 ? -0.5f : 1.0f);
}

std::vector<float> Rows() {
  std::vector<float> x(kM * kK);
  for (int64_t m = 0; m < kM; ++m) {
    for (int64_t k = 0; k < kK; ++k) x[m * kK + k] = X(m, k);
  }
  return x;
}

// Row group of row m: its first row and its row count.
int64_t GroupStart(int64_t m) { return m / kMr * kMr; }
int64_t GroupRows(int64_t m) {
  return GroupStart(m) + kMr <= kM ? kMr : kM - GroupStart(m);
}

TEST(W4a16PackRows, PlainRowsDivideTheOddK) {
  const std::vector<float> x = Rows();
  std::vector<float> out(kM * kK, -1.0f);
  internal::PackRowsF32(x.data(), DType::kF32, kK, kM, kK, kMr, out.data());
  for (int64_t m = 0; m < kM; ++m) {
    const float* group = out.data() + GroupStart(m) * kK;
    const int64_t rows = GroupRows(m);
    const int64_t r = m - GroupStart(m);
    for (int64_t k = 0; k < kK; ++k) {
      EXPECT_EQ(group[k * rows + r], X(m, k) / (k % 2 == 0 ? 1 : 16))
          << m << "," << k;
    }
  }
}

// Every slot combination the int4 kernel reads: s4, s4 with float zero
// points, u4.
TEST(W4a16PackRows, Int4RowsRecombinePairsAndEndGroupsWithTheirSlots) {
  const std::vector<float> x = Rows();
  for (const auto& [u4, float_zero] :
       {std::pair{false, false}, std::pair{false, true},
        std::pair{true, false}}) {
    SCOPED_TRACE(testing::Message()
                 << "u4 " << u4 << " float_zero " << float_zero);
    const F32Int4RowSlots slots = F32Int4Slots(u4, float_zero);
    const int64_t row_elems =
        internal::PackedF32Int4RowElements(kK, kGroup, slots);
    ASSERT_EQ(row_elems, kK + kK / kGroup * slots.count());
    std::vector<float> out(kM * row_elems, -1.0f);
    internal::PackRowsF32Int4(x.data(), DType::kF32, kK, kM, kK, kMr,
                              out.data(), nullptr, kGroup, slots);
    for (int64_t m = 0; m < kM; ++m) {
      const float* group = out.data() + GroupStart(m) * row_elems;
      const int64_t rows = GroupRows(m);
      const int64_t r = m - GroupStart(m);
      for (int64_t g = 0; g < kK / kGroup; ++g) {
        // Group g starts after g groups' elements and slots.
        const float* at = group + g * (kGroup + slots.count()) * rows;
        float even_sum = 0.0f;
        float sum = 0.0f;
        for (int64_t i = 0; i < kGroup; i += 2) {
          const float even = X(m, g * kGroup + i);
          const float odd = X(m, g * kGroup + i + 1);
          EXPECT_EQ(at[i * rows + r], even - odd / 16) << m << "," << g;
          EXPECT_EQ(at[(i + 1) * rows + r], odd / 16) << m << "," << g;
          even_sum += even;
          sum += even;
          sum += odd;
        }
        const float* s = at + kGroup * rows + r;
        if (slots.neg8_even_sum) {
          EXPECT_EQ(*s, -8.0f * even_sum) << m << "," << g;
          s += rows;
        }
        if (slots.sum) {
          EXPECT_EQ(*s, sum) << m << "," << g;
        }
      }
    }
  }
}

TEST(W4a16PackRows, Int4SlotsFollowTheWeights) {
  EXPECT_TRUE(F32Int4Slots(false, false).neg8_even_sum);
  EXPECT_FALSE(F32Int4Slots(false, false).sum);
  EXPECT_EQ(F32Int4Slots(false, true).count(), 2);
  EXPECT_EQ(F32Int4Slots(false, true).sum_index(), 1);
  EXPECT_FALSE(F32Int4Slots(true, false).neg8_even_sum);
  EXPECT_EQ(F32Int4Slots(true, false).sum_index(), 0);
}

}  // namespace
}  // namespace w4jit
