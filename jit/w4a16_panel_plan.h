// The register plans of the W4A16 f32 panel path's two kernels
// (jit/w4a16_dequant_generator.h, jit/w4a16_panel_generator.h), shared by
// their config checks and emitters: the register budgets are stated here
// only.
//
// Dequantizer, vector registers in order: the block's scales (one per
// vector), the decode constants mask_hi, mask_lo and the s4 zero (8), two
// pairs of temporaries (even / odd k, alternating between vectors), then
// two more to round the weights to bf16 where asked.
// Panel tile of `rows` rows: the accumulators (rows x vectors), one panel
// row (a vector each), one broadcast; the stores after the k loop reuse
// the first two registers after the accumulators.
#ifndef W4JIT_JIT_W4A16_PANEL_PLAN_H_
#define W4JIT_JIT_W4A16_PANEL_PLAN_H_

#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"

namespace w4jit::internal {

struct W4a16DequantPlan {
  int nv = 0;  // vectors of the block (its scales: 0 .. nv - 1)
  int mask_hi = -1, mask_lo = -1, zero8 = -1;
  int temps = -1;  // 4 temporaries: even / odd of two alternating sets
  int round0 = -1, round1 = -1;  // bf16 rounding; -1 without
  int used = 0;

  int Even(int v) const { return temps + 2 * (v % 2); }
  int Odd(int v) const { return temps + 1 + 2 * (v % 2); }
};

// The dequantizer's plan for a block of `vectors` vectors on `isa`; an error
// when the registers do not hold it.
absl::StatusOr<W4a16DequantPlan> MakeW4a16DequantPlan(IsaTier isa, int vectors,
                                                      bool round_bf16);

struct W4a16PanelPlan {
  int mr = 0;      // rows of the tile
  int nv = 0;      // vectors of the tile
  int panel = -1;  // the panel row: nv registers
  int bcast = -1;
  int store0 = -1, store1 = -1;  // the stores' temporaries
  int used = 0;

  int Acc(int r, int v) const { return r * nv + v; }
};

// The panel tile's plan for `rows` rows of `vectors` vectors on `isa`.
absl::StatusOr<W4a16PanelPlan> MakeW4a16PanelPlan(IsaTier isa, int rows,
                                                  int vectors);

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_PANEL_PLAN_H_
