// The order of one K step's tile loads and products on a grid of
// row_tiles x 2 accumulators (C[rt][h] += A[rt] x B[h]): shared by the AMX
// kernels (jit/da8w4_amx_generator.h, jit/w4a16_amx_generator.h), which
// both drain the previous unit's accumulators inside the next unit's
// first step.
#ifndef W4JIT_JIT_AMX_TILE_STEP_H_
#define W4JIT_JIT_AMX_TILE_STEP_H_

#include <cstdint>

namespace w4jit::internal {

// Rows [begin, end) of part `part` of `parts` of a group end over `rows`
// rows: the previous unit's group end runs in such parts, one behind each
// K step of the next unit (an empty part where rows < parts).
struct GroupEndRows {
  int begin;
  int end;
};
inline GroupEndRows GroupEndPart(int rows, int64_t part, int64_t parts) {
  return {static_cast<int>(rows * part / parts),
          static_cast<int>(rows * (part + 1) / parts)};
}

// load_a(rt), load_b(h) and dot(rt, h) emit the loads and the product.
// A plain step loads every A and B tile, then runs the products
// interleaved, so that their chains hide each other's latency. A draining
// step (where dot first stores and zeroes C[rt][h]) issues each load as
// late as its first product and the products in the order the previous
// unit's products end: tile registers are not renamed, so a load waits for the
// previous unit's products still reading the register, and a store for
// the product writing it.
template <class LoadA, class LoadB, class Dot>
void EmitTileStepOrder(int row_tiles, bool drain, const LoadA& load_a,
                       const LoadB& load_b, const Dot& dot) {
  if (drain) {
    load_a(0);
    load_b(0);
    dot(0, 0);
    load_b(1);
    dot(0, 1);
    if (row_tiles == 2) {
      load_a(1);
      dot(1, 0);
      dot(1, 1);
    }
    return;
  }
  for (int rt = 0; rt < row_tiles; ++rt) load_a(rt);
  for (int h = 0; h < 2; ++h) load_b(h);
  for (int rt = 0; rt < row_tiles; ++rt) {
    for (int h = 0; h < 2; ++h) dot(rt, h);
  }
}

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_AMX_TILE_STEP_H_
