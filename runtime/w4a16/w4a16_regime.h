// Which W4A16 code path runs at which M, stated once per layer
// (runtime/regime.h): the kernel lookup builds the kernels of the paths
// the table names and Run picks the row of its M. The rows come from the
// parameters' thresholds (tall_min_m, gemm_min_m, amx_min_m) and what the
// layer can run (flavour, numerics, the tiles).
#ifndef W4JIT_RUNTIME_W4A16_W4A16_REGIME_H_
#define W4JIT_RUNTIME_W4A16_W4A16_REGIME_H_

#include <cstdint>

#include "runtime/regime.h"

namespace w4jit::internal {

enum class W4a16Path {
  kInt4Small,  // the int4 kernel, gemv_mr-row tiles
  kInt4Tall,   // the int4 kernel, tall_mr x tall_vectors tiles
  kPanels,     // dequantized f32 panels x the FMA panel tile
  kTiles,      // the AMX tiles over decoded bf16 panels
};
const char* ToString(W4a16Path path);

using W4a16Regime = Regime<W4a16Path>;

// The inputs the table is made from (W4a16Plan's).
struct W4a16RegimeInputs {
  bool bf16_dot = false;     // the bf16-dot flavour (no panel path)
  bool panels_only = false;  // Numerics::kZentorch: panels (or tiles)
  bool tiles = false;        // the AMX tiles can run the layer
  int64_t tall_min_m = 1;
  int64_t gemm_min_m = 1;
  int64_t amx_min_m = 1;
};
W4a16Regime MakeW4a16Regime(const W4a16RegimeInputs& in);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_W4A16_REGIME_H_
