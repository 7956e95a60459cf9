#include "runtime/w4a16/w4a16_tile_grid.h"

#include <algorithm>

#include "runtime/w4a16/w4a16_tile_x.h"

namespace w4jit::internal {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The fewest whole items per part that cut `items` into at least `parts`
// parts (at most items parts).
int64_t PerPartFor(int64_t items, int64_t parts) {
  return CeilDiv(items, std::clamp<int64_t>(parts, 1, items));
}

}  // namespace

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
  g.blocks_per_group =
      std::clamp<int64_t>(nc / std::max<int64_t>(nb, 1), 1, g.blocks);
  if (g.units() < threads) {
    g.blocks_per_group = PerPartFor(g.blocks, CeilDiv(threads, g.row_blocks()));
  }
  if (g.units() < threads) {
    g.tiles_per_block = PerPartFor(g.tiles, CeilDiv(threads, g.col_groups()));
  }
  g.chunks = static_cast<int>(std::min<int64_t>(threads, g.units()));
  return g;
}

}  // namespace w4jit::internal
