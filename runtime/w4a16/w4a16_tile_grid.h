// The work split of the W4A16 AMX tiles (large M): units of (row block of
// whole row tiles, column group of whole packed blocks). A unit runs K
// block by K block, and within a K block every column block of its group
// (decoding the block's panel once, then every row tile of the row block):
// so the K block of x (rows x amx_kc bf16) is read from L2 for every
// column block of the group rather than from L3, and the f32 scratch holds
// the unit's rows x columns. A row block of one or two row tiles runs each
// column block's K in turn instead (RunTiles). Units are numbered row block
// by row block.
#ifndef W4JIT_RUNTIME_W4A16_W4A16_TILE_GRID_H_
#define W4JIT_RUNTIME_W4A16_W4A16_TILE_GRID_H_

#include <cstdint>

namespace w4jit::internal {

struct W4a16TileGrid {
  int64_t tiles = 0;             // row tiles of the call
  int64_t blocks = 0;            // packed column blocks
  int64_t tiles_per_block = 1;   // row tiles per row block
  int64_t blocks_per_group = 1;  // column blocks per column group
  int chunks = 1;                // parallel chunks, <= units()

  int64_t row_blocks() const;
  int64_t col_groups() const;
  int64_t units() const { return row_blocks() * col_groups(); }

  // Row tiles [t0, t1) and column blocks [b0, b1) of unit u.
  struct Unit {
    int64_t t0, t1, b0, b1;
  };
  Unit UnitAt(int64_t u) const;
};

// Row blocks of about mc rows (whole tiles of 32, equal to within a tile)
// and column groups of at most nc columns (whole blocks of nb, at least
// one), narrower where the threads' shares of the work would be uneven,
// then shorter row blocks where there are fewer units than threads.
// The largest thread's share of the (row tile, column block) pairs over
// the mean share, with the units cut into `threads` contiguous ranges as
// RunTiles cuts them (1: even).
double Imbalance(const W4a16TileGrid& grid, int threads);

W4a16TileGrid MakeW4a16TileGrid(int64_t tiles, int64_t blocks, int64_t nb,
                                int64_t mc, int64_t nc, int threads);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_W4A16_TILE_GRID_H_
