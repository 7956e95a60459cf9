#include "jit/w4a16_panel_plan.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {

absl::StatusOr<W4a16DequantPlan> MakeW4a16DequantPlan(IsaTier isa, int vectors,
                                                      bool round_bf16) {
  W4a16DequantPlan p;
  p.nv = vectors;
  p.scales = 0;
  int next = p.scales + vectors;
  p.mask_hi = next++;
  p.mask_lo = next++;
  p.zero8 = next++;
  p.temps = next;
  next += 4;
  if (round_bf16) {
    p.round0 = next++;
    p.round1 = next++;
  }
  p.used = next;
  if (p.used > TraitsOf(isa).vector_regs) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a block of %d vectors needs %d vector registers, %d exist", vectors,
        p.used, TraitsOf(isa).vector_regs));
  }
  return p;
}

absl::StatusOr<W4a16PanelPlan> MakeW4a16PanelPlan(IsaTier isa, int rows,
                                                  int vectors) {
  W4a16PanelPlan p;
  p.mr = rows;
  p.nv = vectors;
  const int acc = rows * vectors;
  p.panel = acc;
  p.bcast = acc + vectors;
  p.store0 = acc;
  p.store1 = acc + 1;
  // The k loop's panel row and broadcast; the bf16 stores' two temporaries.
  p.used = acc + std::max(vectors + 1, 2);
  if (p.used > TraitsOf(isa).vector_regs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tile %d x %d vectors needs %d vector registers", rows,
                        vectors, p.used));
  }
  return p;
}

}  // namespace w4jit::internal
