#include "runtime/w4a16/w4a16_regime.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace w4jit::internal {

const char* ToString(W4a16Path path) {
  switch (path) {
    case W4a16Path::kInt4Small:
      return "int4_small";
    case W4a16Path::kInt4Tall:
      return "int4_tall";
    case W4a16Path::kPanels:
      return "panels";
    case W4a16Path::kTiles:
      return "tiles";
  }
  return "?";
}

W4a16Path W4a16Regime::PathAt(int64_t m) const {
  W4a16Path path = rows.front().path;
  for (const Row& r : rows) {
    if (r.min_m > m) break;
    path = r.path;
  }
  return path;
}

bool W4a16Regime::Uses(W4a16Path path) const {
  return std::any_of(rows.begin(), rows.end(),
                     [&](const Row& r) { return r.path == path; });
}

std::string W4a16Regime::str() const {
  std::string s;
  for (const Row& r : rows) {
    absl::StrAppend(&s, s.empty() ? "" : ", ", ToString(r.path), " from ",
                    r.min_m);
  }
  return s;
}

W4a16Regime MakeW4a16Regime(const W4a16RegimeInputs& in) {
  W4a16Regime regime;
  regime.rows = {{1, W4a16Path::kInt4Small}};
  // From `from` on, `path`: later thresholds override earlier ones.
  auto from = [&](int64_t min_m, W4a16Path path) {
    min_m = std::max<int64_t>(min_m, 1);
    auto& rows = regime.rows;
    rows.erase(std::remove_if(
                   rows.begin(), rows.end(),
                   [&](const W4a16Regime::Row& r) { return r.min_m >= min_m; }),
               rows.end());
    if (rows.empty() || rows.back().path != path) rows.push_back({min_m, path});
  };
  if (in.panels_only) {
    // The dequantizer rounds each weight (zentorch's numerics); the int4
    // kernels never hold a dequantized weight to round. The tiles' decoder
    // rounds the same weights.
    from(1, W4a16Path::kPanels);
  } else {
    from(in.tall_min_m, W4a16Path::kInt4Tall);
    // The bf16-dot flavour has no panel path: its tall tile runs every
    // larger M.
    if (!in.bf16_dot) from(in.gemm_min_m, W4a16Path::kPanels);
  }
  if (in.tiles) from(in.amx_min_m, W4a16Path::kTiles);
  return regime;
}

}  // namespace w4jit::internal
