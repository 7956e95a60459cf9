#include "runtime/da8w4/da8w4_regime.h"

#include <algorithm>

namespace w4jit::internal {

const char* ToString(Da8w4Path path) {
  switch (path) {
    case Da8w4Path::kOnePass:
      return "one_pass";
    case Da8w4Path::kInLoop:
      return "in_loop";
    case Da8w4Path::kPanels:
      return "panels";
    case Da8w4Path::kTiles:
      return "tiles";
  }
  return "?";
}

Da8w4Regime MakeDa8w4Regime(const Da8w4RegimeInputs& in) {
  Da8w4Regime regime(Da8w4Path::kOnePass);
  // Every other path starts above the hand-over: up to it the weights
  // stream once, whatever the other thresholds say.
  const int64_t above = in.handover_m + 1;
  regime.From(above, Da8w4Path::kInLoop);
  if (in.panels) {
    regime.From(std::max(in.panel_min_m, above), Da8w4Path::kPanels);
  }
  // The tiles win over the panels from their M on (set last).
  if (in.tiles) regime.From(std::max(in.amx_min_m, above), Da8w4Path::kTiles);
  return regime;
}

}  // namespace w4jit::internal
