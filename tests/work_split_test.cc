// The work split: contiguous, aligned, balanced shares that cover the
// range exactly once, one part per thread for small M, and the 2-D split of
// large-M GEMMs (every (row tile, column unit) pair in exactly one work
// item, panels within the L2 budget, rows cut only when the panels are too
// few, item counts that keep every thread busy to the end).
#include "runtime/threads/work_split.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
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

void ExpectPartition(int64_t row_tiles, int64_t col_units, int64_t panel_units,
                     int threads) {
  SCOPED_TRACE(absl::StrCat("tiles=", row_tiles, " units=", col_units,
                            " panel=", panel_units, " threads=", threads));
  const GemmSplit2d s =
      PlanGemmSplit2d(row_tiles, col_units, panel_units, threads);
  ASSERT_GE(s.panels, 1);
  ASSERT_GE(s.row_parts, 1);
  EXPECT_LE(s.row_parts, row_tiles);
  std::vector<int> seen(static_cast<size_t>(row_tiles * col_units), 0);
  int64_t min_cols = col_units, max_cols = 0;
  for (int64_t i = 0; i < s.items(); ++i) {
    const GemmWorkItem item = GemmSplit2dItem(s, row_tiles, col_units, i);
    const int64_t cols = item.cols.end - item.cols.begin;
    EXPECT_LE(cols, panel_units) << "item " << i;
    min_cols = std::min(min_cols, cols);
    max_cols = std::max(max_cols, cols);
    for (int64_t r = item.rows.begin; r < item.rows.end; ++r) {
      for (int64_t c = item.cols.begin; c < item.cols.end; ++c) {
        ++seen[static_cast<size_t>(r * col_units + c)];
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i], 1) << "tile " << i / col_units << " unit "
                          << i % col_units;
  }
  EXPECT_LE(max_cols - min_cols, 1);
  // Rows are cut only when the L2-sized panels are fewer than the threads.
  if (s.row_parts > 1) {
    EXPECT_LT((col_units + panel_units - 1) / panel_units, threads);
  }
  // No partial last round where the columns allow one more panel.
  if (s.items() % threads != 0) {
    EXPECT_TRUE(s.panels >= col_units || s.row_parts > 1 || s.items() < threads)
        << s.panels << " panels x " << s.row_parts;
  }
}

TEST(WorkSplit2d, CoversEveryTileOnceWithinTheL2Budget) {
  for (int threads : {1, 2, 3, 4, 7, 16}) {
    for (int64_t tiles : {1, 2, 5, 43, 171}) {
      for (int64_t units : {1, 2, 3, 13, 96, 384}) {
        for (int64_t panel : {1, 2, 4, 100, 1000}) {
          ExpectPartition(tiles, units, panel, threads);
        }
      }
    }
  }
}

TEST(WorkSplit2d, Llama3Qkv) {
  // AVX2, 6144 columns in 384 blocks, 4 decoded blocks per 256 KiB panel,
  // M = 256 in 43 tiles, 2 threads: 96 panels, rows not cut.
  const GemmSplit2d s = PlanGemmSplit2d(43, 384, 4, 2);
  EXPECT_EQ(s.panels, 96);
  EXPECT_EQ(s.row_parts, 1);
}

TEST(WorkSplit2d, OddPanelCountIsEvenedOut) {
  const GemmSplit2d s = PlanGemmSplit2d(10, 9, 2, 2);  // 5 panels
  EXPECT_EQ(s.items() % 2, 0);
  EXPECT_EQ(s.row_parts, 1);
}

TEST(WorkSplit2d, FewColumnsCutTheRows) {
  const GemmSplit2d s = PlanGemmSplit2d(20, 1, 8, 4);
  EXPECT_EQ(s.panels, 1);
  EXPECT_EQ(s.row_parts, 4);
  // Never more row parts than tiles.
  EXPECT_EQ(PlanGemmSplit2d(2, 1, 8, 4).row_parts, 2);
}

TEST(WorkSplit2d, BadArgumentsAreClamped) {
  const GemmSplit2d s = PlanGemmSplit2d(0, 0, 0, 0);
  EXPECT_EQ(s.items(), 1);
  const GemmWorkItem item = GemmSplit2dItem(s, 1, 1, 0);
  EXPECT_EQ(item.rows.end - item.rows.begin, 1);
  EXPECT_EQ(item.cols.end - item.cols.begin, 1);
}

}  // namespace
}  // namespace w4jit::internal
