// The register plan of the DA8W4 activation quantizer
// (jit/act_quantizer_generator.h): the roles of its vector, mask and
// general-purpose registers, and the per-config loop shape (lanes, row and
// group tails). The generator places its registers by it and names nothing
// else; the budget is stated here only.
//
// Vector registers (VecEmitter::Vec indices), the same at both widths:
//   0-3   pass 1's four running maxima (one chain per unrolled chunk), then
//         pass 2's chunk values (slot u of an unrolled step in u);
//   4     the |x| mask of pass 1; act-order bf16 pass 2 keeps x[0] in
//         every lane here (the value of the lane a gather leaves out), so
//         pass 1 of the next row (and of the next group) reloads the mask;
//   5     sa broadcast, 6 the group's running sum, 7 / 8 the clamp bounds;
//   9-12  temporaries: the value loaded by chunk slot u at 9 + u (pass 1),
//         chunk u's gather indices / pack spare at 9 + u (pass 2), the
//         gather indices of per-group pass 1 at 11 + u; 9 is also the
//         scalar sa and the zero of the non-finite paths;
//   13/14 AVX2 lane masks of the row tail / group tail (masked loads);
//   15    AVX2 act-order: the gather's lane mask.
// AVX-512 holds the tail masks in k1 / k2 and the gather mask in k3.
// Sixteen vector registers: the AVX2 count, so one plan serves both tiers.
#ifndef W4JIT_JIT_ACT_QUANT_PLAN_H_
#define W4JIT_JIT_ACT_QUANT_PLAN_H_

#include "xbyak/xbyak.h"

namespace w4jit::internal {

struct ActQuantConfig;  // jit/act_quantizer_generator.h

struct ActQuantPlan {
  static constexpr int kMax = 0;    // kMax + u: pass 1's maxima, u < 4
  static constexpr int kValue = 0;  // kValue + u: pass 2's chunk u
  static constexpr int kAbsMask = 4;
  static constexpr int kX0 = 4;  // act-order bf16, pass 2 (see above)
  static constexpr int kSa = 5;
  static constexpr int kGroupSum = 6;
  static constexpr int kHi = 7;   // +127 in each lane
  static constexpr int kLo = 8;   // -127 in each lane
  static constexpr int kTmp = 9;  // kTmp + u: chunk u's temporary, u < 4
  static constexpr int kGroupGatherIdx = 11;  // + u, u < 2
  static constexpr int kRowTailMask = 13;
  static constexpr int kGroupTailMask = 14;
  static constexpr int kGatherMask = 15;
  static constexpr int kUsed = 16;
  // Chunks per iteration of pass 1 over the row and of pass 2 (one chain
  // each), and of per-group pass 1 (a group is often one or two chunks).
  static constexpr int kUnroll = 4;
  static constexpr int kGroupMaxUnroll = 2;

  int lanes = 0;       // f32 lanes of a vector (8 or 16)
  int row_tail = 0;    // pass 1's last partial chunk over the row, lanes
  int group_tail = 0;  // a group's last partial chunk, lanes
};

// The plan of the config's kernel (checked by CheckActQuantConfig).
ActQuantPlan MakeActQuantPlan(const ActQuantConfig& config);

// AVX-512 opmask roles: the row tail's and the group tail's lanes, and the
// lanes a gather reads.
namespace act_quant_kmask {
inline constexpr Xbyak::Opmask kRowTail(1);
inline constexpr Xbyak::Opmask kGroupTail(2);
inline constexpr Xbyak::Opmask kGather(3);
}  // namespace act_quant_kmask

// General-purpose register roles, one each for the whole kernel (System V;
// Preamble saves the callee-saved ones). The row loop's pointers, then
// pass 2's cursors and counters.
namespace act_quant_gpr {
using Xbyak::Operand;
// ActQuantArgs at entry; once every argument is loaded (per group) the sa
// cursor along the row's groups.
inline constexpr Xbyak::Reg64 kArgs(Operand::RDI);
inline constexpr Xbyak::Reg64 kSa(Operand::RDI);
inline constexpr Xbyak::Reg64 kXRow(Operand::RSI);      // x of the row
inline constexpr Xbyak::Reg64 kLdx(Operand::RDX);       // bytes between rows
inline constexpr Xbyak::Reg64 kRowsLeft(Operand::RCX);  // rows left
inline constexpr Xbyak::Reg64 kQaRow(Operand::R8);      // quantized row
inline constexpr Xbyak::Reg64 kSaRow(Operand::R9);      // its scale(s)
inline constexpr Xbyak::Reg64 kSumsRow(Operand::R10);   // its group sums
inline constexpr Xbyak::Reg64 kTableRow(Operand::RBP);  // act-order k_perm
inline constexpr Xbyak::Reg64 kX(Operand::R11);         // x cursor
inline constexpr Xbyak::Reg64 kQa(Operand::R12);        // quantized cursor
inline constexpr Xbyak::Reg64 kSums(Operand::R13);      // group-sum cursor
inline constexpr Xbyak::Reg64 kGroupsLeft(Operand::R14);
inline constexpr Xbyak::Reg64 kTable(Operand::R15);  // act-order table cursor
// The unrolled loops' counter (and the non-finite paths' store counter).
inline constexpr Xbyak::Reg64 kChunksLeft(Operand::RBX);
// A pass 1's result: the maximum |x| bit pattern; also the scratch of the
// mask setup and the non-finite paths' store cursor.
inline constexpr Xbyak::Reg32 kMaxBits(Operand::EAX);
inline constexpr Xbyak::Reg32 kScratch32(Operand::EAX);
inline constexpr Xbyak::Reg64 kScratch(Operand::RAX);
}  // namespace act_quant_gpr

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_ACT_QUANT_PLAN_H_
