#include "runtime/threads/work_split.h"

#include <algorithm>

namespace w4jit::internal {

namespace {

// Rows of the tasks before `task` (the work done before it, in rows x
// column blocks): whole column blocks of m rows, then the row blocks of
// the current one.
int64_t RowsBefore(const W4a16PanelGrid& g, int64_t task) {
  const int64_t col = task / g.row_blocks;
  const int64_t rb = task % g.row_blocks;
  return col * g.m + std::min(g.m, rb * g.row_block);
}

}  // namespace

Range SplitRange(int64_t total, int parts, int part, int64_t align) {
  if (align < 1) align = 1;
  if (parts < 1) parts = 1;
  const int64_t units = (total + align - 1) / align;
  const int64_t base = units / parts;
  const int64_t extra = units % parts;
  const int64_t begin_u = part * base + std::min<int64_t>(part, extra);
  const int64_t end_u = begin_u + base + (part < extra ? 1 : 0);
  return {std::min(total, begin_u * align), std::min(total, end_u * align)};
}

int SmallMParts(int64_t blocks, int threads, int64_t align) {
  if (align < 1) align = 1;
  const int64_t units = (blocks + align - 1) / align;
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(units, std::max(threads, 1))));
}

GemmSplit2d PlanGemmSplit2d(int64_t row_tiles, int64_t col_units,
                            int64_t panel_units, int threads) {
  row_tiles = std::max<int64_t>(row_tiles, 1);
  col_units = std::max<int64_t>(col_units, 1);
  panel_units = std::max<int64_t>(panel_units, 1);
  const int64_t t = std::max(threads, 1);
  GemmSplit2d s;
  s.panels = CeilDiv(col_units, panel_units);
  // Too few panels for the threads: cut the rows too.
  if (s.panels < t) s.row_parts = std::min(row_tiles, CeilDiv(t, s.panels));
  // Balance: a multiple of the threads, by cutting the columns finer (which
  // only shrinks the panels), while there are columns to cut.
  const int64_t items = s.items();
  if (items % t != 0) {
    const int64_t want = CeilDiv(items, t) * t;
    const int64_t panels = CeilDiv(want, s.row_parts);
    if (panels <= col_units && panels * s.row_parts == want) s.panels = panels;
  }
  return s;
}

GemmWorkItem GemmSplit2dItem(const GemmSplit2d& split, int64_t row_tiles,
                             int64_t col_units, int64_t item) {
  const int64_t panel = item / split.row_parts;
  const int64_t part = item % split.row_parts;
  return GemmWorkItem{SplitRange(row_tiles, static_cast<int>(split.row_parts),
                                 static_cast<int>(part)),
                      SplitRange(col_units, static_cast<int>(split.panels),
                                 static_cast<int>(panel))};
}

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
