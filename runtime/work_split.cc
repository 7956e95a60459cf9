#include "runtime/work_split.h"

#include <algorithm>

namespace w4jit::internal {
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
