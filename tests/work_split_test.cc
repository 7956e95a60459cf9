// The work split: contiguous, aligned, balanced shares that cover the
// range exactly once, and one part per thread for small M.
#include "runtime/work_split.h"

#include <algorithm>
#include <cstdint>

#include "gtest/gtest.h"

namespace w4jit::internal {
namespace {

TEST(WorkSplit, RangesTileTheWholeRangeInOrder) {
  for (int64_t total : {0, 1, 7, 64, 100, 4097}) {
    for (int parts : {1, 2, 3, 8, 50}) {
      for (int64_t align : {1, 2, 4, 16}) {
        SCOPED_TRACE(::testing::Message() << "total " << total << " parts "
                                          << parts << " align " << align);
        int64_t expect_begin = 0, smallest = total, largest = 0;
        for (int p = 0; p < parts; ++p) {
          const Range r = SplitRange(total, parts, p, align);
          EXPECT_EQ(r.begin, expect_begin);
          EXPECT_LE(r.begin, r.end);
          if (r.end < total) {
            EXPECT_EQ(r.end % align, 0);
          }
          smallest = std::min(smallest, r.end - r.begin);
          largest = std::max(largest, r.end - r.begin);
          expect_begin = r.end;
        }
        EXPECT_EQ(expect_begin, total);
        // The last share may be short by the partial unit at the end.
        EXPECT_LE(largest - smallest, 2 * align);
      }
    }
  }
}

TEST(WorkSplit, BadAlignOrPartsDegradeToOne) {
  const Range r = SplitRange(10, 0, 0, 0);
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(r.end, 10);
}

TEST(WorkSplit, SmallMIsOnePartPerThreadAtMostOnePerUnit) {
  EXPECT_EQ(SmallMParts(1024, 2), 2);
  EXPECT_EQ(SmallMParts(1024, 16), 16);
  EXPECT_EQ(SmallMParts(3, 8), 3);
  EXPECT_EQ(SmallMParts(9, 8, 4), 3);  // three aligned units
  EXPECT_EQ(SmallMParts(0, 4), 1);
  EXPECT_EQ(SmallMParts(100, 0), 1);
  // Each part is one contiguous equal share: sizes differ by <= align.
  const int parts = SmallMParts(512, 2, 4);
  EXPECT_EQ(SplitRange(512, parts, 0, 4).end, 256);
}

}  // namespace
}  // namespace w4jit::internal
