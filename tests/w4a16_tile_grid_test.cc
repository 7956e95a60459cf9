// The AMX tiles' work split (runtime/w4a16/w4a16_tile_grid.h): every
// (row tile, column block) in exactly one unit, column groups of about nc
// columns, and enough units for the threads.
#include "runtime/w4a16/w4a16_tile_grid.h"

#include <gtest/gtest.h>

#include <vector>

namespace w4jit::internal {
namespace {

void ExpectCoversOnce(const W4a16TileGrid& g) {
  std::vector<int> seen(static_cast<size_t>(g.tiles * g.blocks), 0);
  for (int64_t u = 0; u < g.units(); ++u) {
    const W4a16TileGrid::Unit unit = g.UnitAt(u);
    ASSERT_LT(unit.t0, unit.t1);
    ASSERT_LT(unit.b0, unit.b1);
    for (int64_t t = unit.t0; t < unit.t1; ++t) {
      for (int64_t b = unit.b0; b < unit.b1; ++b) {
        ++seen[static_cast<size_t>(t * g.blocks + b)];
      }
    }
  }
  for (const int s : seen) EXPECT_EQ(s, 1);
}

TEST(W4a16TileGrid, ColumnGroupsOfAboutNcColumns) {
  // 6144 columns in blocks of 64, 256 rows (8 tiles), mc 256, nc 512.
  const W4a16TileGrid g = MakeW4a16TileGrid(8, 96, 64, 256, 512, 2);
  EXPECT_EQ(g.tiles_per_block, 8);
  EXPECT_EQ(g.blocks_per_group, 8);
  EXPECT_EQ(g.units(), 12);
  EXPECT_EQ(g.chunks, 2);
  ExpectCoversOnce(g);
}

TEST(W4a16TileGrid, NarrowerGroupsWhereTheThreadsWouldBeUneven) {
  // A fused MoE expert: 32 rows, 24 blocks of 64 columns. Groups of 8
  // blocks would give one thread 16 and the other 8; 4 groups of 6 are even.
  const W4a16TileGrid g = MakeW4a16TileGrid(1, 24, 64, 256, 512, 2);
  EXPECT_EQ(g.blocks_per_group, 6);
  EXPECT_DOUBLE_EQ(Imbalance(g, 2), 1.0);
  ExpectCoversOnce(g);
  for (int threads : {3, 4, 5, 6}) {
    const W4a16TileGrid t = MakeW4a16TileGrid(1, 24, 64, 256, 512, threads);
    EXPECT_LE(Imbalance(t, threads), 1.1) << threads;
  }
}

TEST(W4a16TileGrid, RowBlocksOfEqualTiles) {
  // 17 tiles at mc 256 (8 tiles): three blocks of 6, 6 and 5.
  const W4a16TileGrid g = MakeW4a16TileGrid(17, 4, 64, 256, 256, 1);
  EXPECT_EQ(g.tiles_per_block, 6);
  EXPECT_EQ(g.row_blocks(), 3);
  ExpectCoversOnce(g);
}

TEST(W4a16TileGrid, NarrowerGroupsThenShorterBlocksForTheThreads) {
  // One row block, 8 blocks in one group of 512 columns: 16 threads get 8
  // groups of one block, then row blocks of one tile.
  const W4a16TileGrid g = MakeW4a16TileGrid(4, 8, 64, 256, 512, 16);
  EXPECT_EQ(g.blocks_per_group, 1);
  EXPECT_EQ(g.tiles_per_block, 2);
  EXPECT_GE(g.units(), 16);
  EXPECT_EQ(g.chunks, 16);
  ExpectCoversOnce(g);
}

TEST(W4a16TileGrid, TinyCallsStillCoverEverything) {
  for (int64_t tiles : {1, 2, 3}) {
    for (int64_t blocks : {1, 2, 5}) {
      for (int threads : {1, 2, 16}) {
        const W4a16TileGrid g =
            MakeW4a16TileGrid(tiles, blocks, 256, 64, 32, threads);
        EXPECT_LE(g.chunks, g.units());
        ExpectCoversOnce(g);
      }
    }
  }
}

}  // namespace
}  // namespace w4jit::internal
