#include "runtime/w4a16/w4a16_tile_grid.h"

#include <algorithm>

#include "runtime/threads/work_split.h"
#include "runtime/w4a16/w4a16_tile_x.h"

namespace w4jit::internal {
namespace {

// The fewest whole items per part that cut `items` into at least `parts`
// parts (at most items parts).
int64_t PerPartFor(int64_t items, int64_t parts) {
  return CeilDiv(items, std::clamp<int64_t>(parts, 1, items));
}

}  // namespace

double Imbalance(const W4a16TileGrid& g, int threads) {
  const int chunks = static_cast<int>(std::min<int64_t>(threads, g.units()));
  int64_t most = 0;
  for (int c = 0; c < chunks; ++c) {
    const Range r = SplitRange(g.units(), chunks, c);
    int64_t work = 0;
    for (int64_t u = r.begin; u < r.end; ++u) {
      const W4a16TileGrid::Unit unit = g.UnitAt(u);
      work += (unit.t1 - unit.t0) * (unit.b1 - unit.b0);
    }
    most = std::max(most, work);
  }
  return static_cast<double>(most) * threads /
         static_cast<double>(g.tiles * g.blocks);
}

int64_t W4a16TileGrid::row_blocks() const {
  return CeilDiv(tiles, tiles_per_block);
}

int64_t W4a16TileGrid::col_groups() const {
  return CeilDiv(blocks, blocks_per_group);
}

W4a16TileGrid::Unit W4a16TileGrid::UnitAt(int64_t u) const {
  const int64_t rb = u / col_groups(), cg = u % col_groups();
  Unit unit;
  unit.t0 = rb * tiles_per_block;
  unit.t1 = std::min(tiles, unit.t0 + tiles_per_block);
  unit.b0 = cg * blocks_per_group;
  unit.b1 = std::min(blocks, unit.b0 + blocks_per_group);
  return unit;
}

W4a16TileGrid MakeW4a16TileGrid(int64_t tiles, int64_t blocks, int64_t nb,
                                int64_t mc, int64_t nc, int threads) {
  W4a16TileGrid g;
  g.tiles = std::max<int64_t>(tiles, 1);
  g.blocks = std::max<int64_t>(blocks, 1);
  threads = std::max(threads, 1);
  const int64_t row_blocks =
      CeilDiv(g.tiles, std::max<int64_t>(1, mc / W4a16RowTiles::kMaxRows));
  g.tiles_per_block = PerPartFor(g.tiles, row_blocks);
  // Column groups of at most nc columns, then as many more as it takes
  // for the threads' shares of (row tile, column block) pairs to be even
  // to within a tenth: 24 blocks in 3 groups on 2 threads would leave one
  // thread a third idle, 4 groups of 6 do not.
  const int64_t widest =
      std::clamp<int64_t>(nc / std::max<int64_t>(nb, 1), 1, g.blocks);
  for (int64_t groups = CeilDiv(g.blocks, widest); groups <= g.blocks;
       ++groups) {
    g.blocks_per_group = PerPartFor(g.blocks, groups);
    if (Imbalance(g, threads) <= 1.1) break;
  }
  if (g.units() < threads) {
    g.tiles_per_block = PerPartFor(g.tiles, CeilDiv(threads, g.col_groups()));
  }
  g.chunks = static_cast<int>(std::min<int64_t>(threads, g.units()));
  return g;
}

}  // namespace w4jit::internal
