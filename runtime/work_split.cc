#include "runtime/work_split.h"

#include <algorithm>

namespace w4jit::internal {

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

namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

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

}  // namespace w4jit::internal
