#include "runtime/w4a16/w4a16_regime.h"

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

W4a16Regime MakeW4a16Regime(const W4a16RegimeInputs& in) {
  W4a16Regime regime(W4a16Path::kInt4Small);
  if (in.panels_only) {
    // The dequantizer rounds each weight (zentorch's numerics); the int4
    // kernels never hold a dequantized weight to round. The tiles' decoder
    // rounds the same weights.
    regime.From(1, W4a16Path::kPanels);
  } else {
    regime.From(in.tall_min_m, W4a16Path::kInt4Tall);
    // The bf16-dot flavour has no panel path: its tall tile runs every
    // larger M.
    if (!in.bf16_dot) regime.From(in.gemm_min_m, W4a16Path::kPanels);
  }
  if (in.tiles) regime.From(in.amx_min_m, W4a16Path::kTiles);
  return regime;
}

}  // namespace w4jit::internal
