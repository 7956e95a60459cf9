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
// General-purpose registers have one role each for the whole kernel
// (below, after the plans); where a phase reuses one, the role says so.
#ifndef W4JIT_JIT_W4A16_PANEL_PLAN_H_
#define W4JIT_JIT_W4A16_PANEL_PLAN_H_

#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

struct W4a16DequantPlan {
  int nv = 0;      // vectors of the block
  int scales = 0;  // the block's scales of the segment's group: nv from here
  int mask_hi = -1, mask_lo = -1, zero8 = -1;
  int temps = -1;  // 4 temporaries: even / odd of two alternating sets
  int round0 = -1, round1 = -1;  // bf16 rounding; -1 without
  int used = 0;

  int Scale(int v) const { return scales + v; }
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

// The dequantizer's general-purpose register roles: the cursors of its
// segment loop (one group's meta each) and its unrolled loop over k pairs.
namespace w4a16_dequant_gpr {
using Xbyak::Operand;
inline constexpr Xbyak::Reg64 kArgs(Operand::RDI);   // W4a16DequantArgs
inline constexpr Xbyak::Reg64 kW(Operand::RAX);      // packed weights
inline constexpr Xbyak::Reg64 kMeta(Operand::RBX);   // the segment's group
inline constexpr Xbyak::Reg64 kPanel(Operand::RDX);  // the f32 panel
inline constexpr Xbyak::Reg64 kSegmentsLeft(Operand::R10);
// Unrolled iterations left in a segment.
inline constexpr Xbyak::Reg64 kItersLeft(Operand::RSI);
}  // namespace w4a16_dequant_gpr

// The panel tile's general-purpose register roles. The kernel loops over
// row tiles (the row group's pointers move on by its rows) and, per tile,
// over k pairs of the K block.
namespace w4a16_panel_gpr {
using Xbyak::Operand;
inline constexpr Xbyak::Reg64 kArgs(Operand::RDI);      // W4a16PanelArgs, kept
inline constexpr Xbyak::Reg64 kFlags(Operand::R8);      // kLoadAcc | kFinal
inline constexpr Xbyak::Reg64 kARowBytes(Operand::R9);  // a_row_bytes
inline constexpr Xbyak::Reg64 kAccRows(Operand::R12);   // scratch of the tile
inline constexpr Xbyak::Reg64 kARows(Operand::R13);  // its packed rows, k = 0
inline constexpr Xbyak::Reg64 kRowsLeft(Operand::R14);
inline constexpr Xbyak::Reg64 kRowY(Operand::R15);  // y of the row tile
// The k loop's cursors: the panel row and the packed rows at k; in the
// epilogue stores (after the loop) the binary operands' rows.
inline constexpr Xbyak::Reg64 kPanel(Operand::RBX);
inline constexpr Xbyak::Reg64 kA(Operand::RDX);
inline constexpr Xbyak::Reg64 kEpOperand0(Operand::RBX);
inline constexpr Xbyak::Reg64 kEpOperand1(Operand::RDX);
// k pairs left in the K block; its low half is the stores' mask scratch.
inline constexpr Xbyak::Reg64 kPairsLeft(Operand::RSI);
inline constexpr Xbyak::Reg32 kStoreTmp32(Operand::ESI);
// The stores' y cursor; between row tiles a scratch.
inline constexpr Xbyak::Reg64 kStoreY(Operand::RAX);
inline constexpr Xbyak::Reg64 kScratch(Operand::RAX);
inline constexpr Xbyak::Reg64 kBias(Operand::RCX);  // the tile's bias
}  // namespace w4a16_panel_gpr

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_PANEL_PLAN_H_
