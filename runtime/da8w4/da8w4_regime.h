// Which DA8W4 code path runs at which M, stated once per layer
// (runtime/regime.h): the kernel's Build makes the kernels of the paths
// the table names (and MakeDa8w4JitKernel checks only theirs), Run picks
// the row of its M. The rows come from the parameters' thresholds
// (handover_m, panel_min_m, amx_min_m) and what the layer can run (the
// AMX tiles). The vector paths' instructions (AVX2's int16 pairs or
// vpdpbusd) are the tier's, the same at every M (jit/da8w4_gemm_plan.h).
#ifndef W4JIT_RUNTIME_DA8W4_DA8W4_REGIME_H_
#define W4JIT_RUNTIME_DA8W4_DA8W4_REGIME_H_

#include <cstdint>

#include "runtime/regime.h"

namespace w4jit::internal {

enum class Da8w4Path {
  // The tiles that unpack nibbles in the loop, the work split over column
  // blocks only: the weights stream from memory once (decode, M up to
  // handover_m).
  kOnePass,
  // The same tiles over M x N work items, each item's column panel
  // re-read from L2 by its row tiles.
  kInLoop,
  // Each work item decodes its column panel once into scratch, then the
  // panel tile (loads and dot products only) runs on it.
  kPanels,
  // The AMX tiles over decoded panels (jit/da8w4_amx_generator.h).
  kTiles,
};
const char* ToString(Da8w4Path path);

using Da8w4Regime = Regime<Da8w4Path>;

// Whether the path's work items run on decoded panels.
inline bool Decodes(Da8w4Path path) {
  return path == Da8w4Path::kPanels || path == Da8w4Path::kTiles;
}

// The inputs the table is made from (Da8w4Params' and the layer's).
struct Da8w4RegimeInputs {
  int64_t handover_m = 16;  // one pass up to here; the rest only above
  bool panels = false;      // decoded panels at all (Da8w4Params::panels())
  int64_t panel_min_m = 1;
  bool tiles = false;  // the AMX tiles can run the layer
  int64_t amx_min_m = 1;
};
Da8w4Regime MakeDa8w4Regime(const Da8w4RegimeInputs& in);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_DA8W4_DA8W4_REGIME_H_
