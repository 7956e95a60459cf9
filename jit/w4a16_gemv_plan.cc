#include "jit/w4a16_gemv_plan.h"

#include "absl/strings/str_format.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {

absl::StatusOr<W4a16GemvPlan> MakeW4a16GemvPlan(const W4a16GemvConfig& config,
                                                int rows) {
  const IsaTraits& isa = TraitsOf(config.isa);
  const int regs = isa.vector_regs;
  const bool dot = config.flavor == Flavor::kBf16Dot;
  const int block_vectors = config.nr / isa.lanes32();
  W4a16GemvPlan p;
  p.mr = rows;
  p.nv = config.tile_vectors == 0 ? block_vectors : config.tile_vectors;
  p.split = config.mr * p.nv < 8 ? 2 : 1;
  int next = rows * p.nv * p.split;
  p.t0 = next++;
  p.t1 = next++;
  if (dot) {
    p.table = next++;
    p.spare = p.table;
    if (config.folded_zero) p.zf = next++;
  } else if (!isa.Has(IsaFeature::kAvx512)) {
    if (next + 2 * rows + 1 <= regs) {
      p.hold_x = true;
      p.x0 = next;
      next += 2 * rows;
      p.spare = p.x0;
    } else if (p.nv > 1 && next - 2 + 2 * p.nv + 1 <= regs) {
      p.dec = p.t0;
      next += 2 * p.nv - 2;
      p.bcast = next++;
      p.spare = p.bcast;
    } else {
      p.bcast = next++;
      p.spare = p.bcast;
    }
  } else {
    p.spare = next++;  // AVX-512: embedded broadcasts, no broadcast register
  }
  // The f32 decode's mask in a register if one is left.
  if (!dot && next < regs) p.mask_lo = next++;
  p.used = next;
  if (p.used > regs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "row tile %d x %d vectors needs %d vector registers, %d exist", rows,
        p.nv, p.used, regs));
  }
  return p;
}

int W4a16GemvMaxRows(const W4a16GemvConfig& config) {
  W4a16GemvConfig c = config;
  int rows = 0;
  // Each row adds at least one accumulator: the vector registers bound the
  // rows.
  for (int r = 1; r <= TraitsOf(c.isa).vector_regs; ++r) {
    c.mr = r;
    if (!MakeW4a16GemvPlan(c, r).ok()) break;
    rows = r;
  }
  return rows;
}

}  // namespace w4jit::internal
