#include "runtime/moe/work_items.h"

#include <algorithm>

namespace w4jit::internal {

std::vector<MoeItem> MakeMoeItems(const Routing& routing, int64_t experts,
                                  int64_t panels) {
  std::vector<MoeItem> items;
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t rows = routing.rows(e);
    if (rows == 0) continue;
    const int parts =
        static_cast<int>((rows + kMaxItemRows - 1) / kMaxItemRows);
    for (int part = 0; part < parts; ++part) {
      const Range r = SplitRange(rows, parts, part);
      for (int64_t p = 0; p < panels; ++p) {
        items.push_back(
            {e, p, {routing.offset[e] + r.begin, routing.offset[e] + r.end}});
      }
    }
  }
  return items;
}

std::vector<int64_t> ChunkMoeItems(const std::vector<MoeItem>& items,
                                   const std::vector<int64_t>& panel_cols,
                                   int threads) {
  const int64_t n = static_cast<int64_t>(items.size());
  std::vector<int64_t> prefix(static_cast<size_t>(n + 1), 0);
  for (int64_t i = 0; i < n; ++i) {
    const MoeItem& it = items[i];
    prefix[i + 1] = prefix[i] + (it.rows.end - it.rows.begin + kRowOverhead) *
                                    panel_cols[it.panel];
  }
  const int64_t chunks =
      std::clamp<int64_t>(threads, 1, std::max<int64_t>(n, 1));
  std::vector<int64_t> bounds = {0};
  for (int64_t c = 1; c < chunks; ++c) {
    // The first item whose cost prefix reaches c / chunks of the total.
    const int64_t target = (prefix[n] * c + chunks - 1) / chunks;
    int64_t b =
        std::lower_bound(prefix.begin(), prefix.end(), target) - prefix.begin();
    // Never empty: at least one item past the previous bound, and one
    // left for every chunk after this one.
    b = std::clamp(b, bounds.back() + 1, n - (chunks - c));
    bounds.push_back(b);
  }
  bounds.push_back(n);
  return bounds;
}

}  // namespace w4jit::internal
