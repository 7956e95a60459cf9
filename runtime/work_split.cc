#include "runtime/work_split.h"

#include <algorithm>

namespace w4jit::internal {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows of the tasks before `task` (the work done before it, in rows x
// column blocks): whole column blocks of m rows, then the row blocks of
// the current one.
int64_t RowsBefore(const W4a16PanelGrid& g, int64_t task) {
  const int64_t col = task / g.row_blocks;
  const int64_t rb = task % g.row_blocks;
  return col * g.m + std::min(g.m, rb * g.row_block);
}

}  // namespace

W4a16PanelGrid MakeW4a16PanelGrid(int64_t m, int64_t col_blocks, int mr,
                                  int64_t mc, int threads) {
  W4a16PanelGrid g;
  g.m = std::max<int64_t>(m, 1);
  g.col_blocks = std::max<int64_t>(col_blocks, 1);
  mr = std::max(mr, 1);
  threads = std::max(threads, 1);
  const int64_t tiles = CeilDiv(g.m, mr);  // row tiles of the call
  const int64_t tiles_per_block = std::max<int64_t>(1, mc / mr);
  int64_t blocks = CeilDiv(tiles, tiles_per_block);
  // Too few tasks to give every thread one: cut the rows finer.
  if (blocks * g.col_blocks < threads) {
    blocks = std::min(tiles, CeilDiv(threads, g.col_blocks));
  }
  // Equal heights in whole tiles; the last block takes the rest.
  g.row_block = CeilDiv(tiles, blocks) * mr;
  g.row_blocks = CeilDiv(g.m, g.row_block);
  g.chunks = static_cast<int>(std::min<int64_t>(threads, g.tasks()));
  return g;
}

W4a16PanelTask W4a16PanelTaskAt(const W4a16PanelGrid& g, int64_t task) {
  W4a16PanelTask t;
  t.col_block = task / g.row_blocks;
  t.m0 = (task % g.row_blocks) * g.row_block;
  t.rows = std::min(g.row_block, g.m - t.m0);
  return t;
}

Range W4a16PanelChunk(const W4a16PanelGrid& g, int chunk) {
  const int64_t total = g.m * g.col_blocks;
  // The first task whose start is at or past the chunk's share of rows.
  auto first_at = [&](int c) {
    if (c <= 0) return int64_t{0};
    if (c >= g.chunks) return g.tasks();
    const int64_t target = CeilDiv(total * c, g.chunks);
    int64_t lo = 0, hi = g.tasks();
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (RowsBefore(g, mid) >= target) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  };
  return {first_at(chunk), first_at(chunk + 1)};
}

}  // namespace w4jit::internal
