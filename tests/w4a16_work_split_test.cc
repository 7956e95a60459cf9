// The W4A16 panel path's 2-D split (runtime/threads/work_split.h): every output
// tile is covered exactly once, row blocks start on row tiles, chunks are
// balanced to within one task, and every thread gets work when it can.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/threads/work_split.h"

namespace w4jit::internal {
namespace {

struct Shape {
  int64_t m;
  int64_t col_blocks;
  int mr;
  int64_t mc;
  int threads;
};

TEST(W4a16PanelSplit, CoversEveryRowAndColumnBlockOnce) {
  const Shape shapes[] = {{1, 1, 6, 96, 1},      {16, 128, 6, 96, 2},
                          {64, 192, 6, 96, 2},   {100, 3, 6, 96, 2},
                          {255, 7, 6, 96, 3},    {1024, 128, 6, 96, 2},
                          {4096, 896, 6, 96, 2}, {7, 1, 6, 96, 4},
                          {13, 1, 4, 8, 3},      {97, 2, 6, 6, 5}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE(testing::Message()
                 << "M " << s.m << " blocks " << s.col_blocks << " mr " << s.mr
                 << " mc " << s.mc << " threads " << s.threads);
    const W4a16PanelGrid g =
        MakeW4a16PanelGrid(s.m, s.col_blocks, s.mr, s.mc, s.threads);
    ASSERT_GE(g.chunks, 1);
    ASSERT_LE(g.chunks, s.threads);
    EXPECT_EQ(g.row_block % s.mr, 0);
    // Each (row, column block) once, chunks contiguous and in order.
    std::vector<int> seen(static_cast<size_t>(s.m * s.col_blocks), 0);
    int64_t next = 0;
    std::vector<int64_t> rows_per_chunk;
    for (int c = 0; c < g.chunks; ++c) {
      const Range r = W4a16PanelChunk(g, c);
      EXPECT_EQ(r.begin, next);
      next = r.end;
      int64_t rows = 0;
      for (int64_t t = r.begin; t < r.end; ++t) {
        const W4a16PanelTask task = W4a16PanelTaskAt(g, t);
        ASSERT_GE(task.rows, 1);
        ASSERT_LE(task.rows, g.row_block);
        EXPECT_EQ(task.m0 % s.mr, 0);  // starts on a packed row group
        for (int64_t i = task.m0; i < task.m0 + task.rows; ++i) {
          ++seen[static_cast<size_t>(task.col_block * s.m + i)];
        }
        rows += task.rows;
      }
      rows_per_chunk.push_back(rows);
    }
    EXPECT_EQ(next, g.tasks());
    EXPECT_TRUE(
        std::all_of(seen.begin(), seen.end(), [](int v) { return v == 1; }));
    // Each chunk within one task of its share.
    const double share = static_cast<double>(s.m * s.col_blocks) / g.chunks;
    for (int64_t rows : rows_per_chunk) {
      EXPECT_LT(std::abs(rows - share), g.row_block + 1.0)
          << "a chunk is more than a task off its share";
    }
  }
}

TEST(W4a16PanelSplit, RowBlocksAreEvenAndFeedEveryThread) {
  // 100 rows at mc 96: two blocks of 54 and 46 rows, not 96 + 4.
  W4a16PanelGrid g = MakeW4a16PanelGrid(100, 10, 6, 96, 2);
  EXPECT_EQ(g.row_block, 54);
  EXPECT_EQ(g.row_blocks, 2);
  // One column block, 2 threads: the rows are cut in two.
  g = MakeW4a16PanelGrid(64, 1, 6, 96, 2);
  EXPECT_EQ(g.row_blocks, 2);
  EXPECT_EQ(g.chunks, 2);
  // Fewer row tiles than threads: one tile per block.
  g = MakeW4a16PanelGrid(7, 1, 6, 96, 4);
  EXPECT_EQ(g.row_blocks, 2);
  EXPECT_EQ(g.chunks, 2);
  // A column block's row blocks are consecutive tasks.
  g = MakeW4a16PanelGrid(300, 4, 6, 96, 2);
  EXPECT_EQ(W4a16PanelTaskAt(g, 0).col_block, 0);
  EXPECT_EQ(W4a16PanelTaskAt(g, g.row_blocks - 1).col_block, 0);
  EXPECT_EQ(W4a16PanelTaskAt(g, g.row_blocks).col_block, 1);
}

}  // namespace
}  // namespace w4jit::internal
