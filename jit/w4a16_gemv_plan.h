// The register plan of the W4A16 int4 kernel (jit/w4a16_gemv_generator.h),
// computed once per row-tile height and shared by the config check (a
// config is valid when every tile height has a plan) and the emitter (which
// places its registers by it): the register budget is stated here only.
//
// Vector registers of a tile, in order: the accumulators (rows x vectors x
// split chains), two decode temporaries, then per flavour
//   bf16 dot: the vpermw table (also the stores' spare), zf (folded zero
//             points);
//   f32, AVX2: x of one step held for all vectors (2 per row) if it fits,
//             else all of the step's vectors decoded first and one
//             broadcast register, else one broadcast register; the 0x0F
//             mask if a register is left;
//   f32, AVX-512: a spare for the stores (broadcasts are embedded), the
//             0x0F mask if a register is left.
// General-purpose registers have one role each for the whole kernel
// (below); where a phase reuses one, the role says so.
#ifndef W4JIT_JIT_W4A16_GEMV_PLAN_H_
#define W4JIT_JIT_W4A16_GEMV_PLAN_H_

#include "absl/status/statusor.h"
#include "jit/w4a16_gemv_generator.h"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

struct W4a16GemvPlan {
  int mr = 0;  // rows of the tile
  int nv = 0;  // vectors of the tile (the config's tile width)
  // Accumulator chains per (row, vector): a kernel whose tallest tile has
  // fewer than 8 accumulators cannot hide the 4-cycle FMA latency on 2
  // FMA pipes, so it keeps the k-even and k-odd products in separate
  // chains (2); fixed per kernel so that every tile sums in one order.
  int split = 1;
  int t0 = -1, t1 = -1;  // decoded weights (k even / odd, or pair 2q / 2q+1)
  int bcast = -1;        // AVX2: broadcast temporary
  bool hold_x = false;   // AVX2: x of one step held for all vectors
  int x0 = -1;
  // AVX2, tiles of several vectors too tall to hold x: all vectors of a
  // step decoded first (t0/t1 of vector v at dec + 2v), then one broadcast
  // per row and parity feeds nv FMAs (Zen 3 issues about one broadcast per
  // cycle, so a broadcast per FMA halves the FMA rate; measured).
  int dec = -1;
  // The f32 decode's 0x0F mask: a register, or -1 for a memory operand.
  int mask_lo = -1;
  int table = -1;  // dot: the vpermw table
  int zf = -1;     // folded zero points: zf = (8 - z) * s at a group end
  int spare = -1;  // a third temporary for the stores
  int used = 0;    // vector registers the tile uses
  // The tile's first vector in the block: set by the emitter for each
  // column tile (the plan does not depend on it).
  int v0 = 0;

  int Acc(int r, int v, int s) const { return (r * nv + v) * split + s; }
};

// The plan of a tile of `rows` rows (1 .. config.mr) of the config's
// kernel; an error naming the registers it needs when they do not exist.
// The config's flavour, ISA tier and group/shape fields are assumed
// checked (CheckW4a16GemvConfig calls this last).
absl::StatusOr<W4a16GemvPlan> MakeW4a16GemvPlan(const W4a16GemvConfig& config,
                                                int rows);
// The most rows a kernel of `config` (its mr set to them) has a plan for:
// the tallest tile of its width, flavour and tier; 0 if none.
int W4a16GemvMaxRows(const W4a16GemvConfig& config);

// General-purpose register roles ("register decomposition"). The kernel
// loops over blocks (columns), row tiles, groups and steps (k pairs or
// octets); each role is the cursor or counter of one loop.
namespace w4a16_gemv_gpr {
using Xbyak::Operand;
inline constexpr Xbyak::Reg64 kArgs(Operand::RDI);      // W4a16GemvArgs, kept
inline constexpr Xbyak::Reg64 kBlockW(Operand::R8);     // block's weights
inline constexpr Xbyak::Reg64 kBlockMeta(Operand::R9);  // block's meta
// Groups left in the tile's k loop; in the epilogue stores (after the
// loop) the first binary operand's row.
inline constexpr Xbyak::Reg64 kGroupsLeft(Operand::R10);
inline constexpr Xbyak::Reg64 kEpOperand0(Operand::R10);
inline constexpr Xbyak::Reg64 kBlockY(Operand::R11);    // y of block, row 0
inline constexpr Xbyak::Reg64 kBlock(Operand::R12);     // block index
inline constexpr Xbyak::Reg64 kRowX(Operand::R13);      // x of the row tile
inline constexpr Xbyak::Reg64 kRowsLeft(Operand::R14);  // rows left
inline constexpr Xbyak::Reg64 kRowY(Operand::R15);      // y of the row tile
// The k loop's cursors: weights, meta (scales, zero points), packed x.
// After the loop rax is the stores' y cursor (and, between row tiles, a
// scratch), rbx a scratch of the epilogue stores, rdx the second binary
// operand's row.
inline constexpr Xbyak::Reg64 kW(Operand::RAX);
inline constexpr Xbyak::Reg64 kMeta(Operand::RBX);
inline constexpr Xbyak::Reg64 kX(Operand::RDX);
inline constexpr Xbyak::Reg64 kStoreY(Operand::RAX);
inline constexpr Xbyak::Reg64 kScratch(Operand::RAX);
inline constexpr Xbyak::Reg64 kEpScratch(Operand::RBX);
inline constexpr Xbyak::Reg64 kEpOperand1(Operand::RDX);
// Step iterations left in a group; its low half is the stores' mask
// scratch.
inline constexpr Xbyak::Reg64 kStepsLeft(Operand::RSI);
inline constexpr Xbyak::Reg32 kStoreTmp32(Operand::ESI);
inline constexpr Xbyak::Reg64 kBias(Operand::RCX);      // bias of the block
inline constexpr Xbyak::Reg64 kSavedRsp(Operand::RBP);  // rsp at entry
}  // namespace w4a16_gemv_gpr

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_GEMV_PLAN_H_
