#include "jit/w4a16_amx_generator.h"

#include <cstddef>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "jit/amx_tile_step.h"
#include "jit/epilogue_emit.h"
#include "jit/w4a16_layout.h"

namespace w4jit::internal {
namespace {

using Xbyak::Tmm;
using Xbyak::Xmm;
using Xbyak::Zmm;
using Xbyak::util::ptr;

// GPR roles. rdi: args; rbp: the frame (rsp is aligned below it).
// The K loop's cursors and strides (per row block: the first's, the
// second's):
constexpr Xbyak::Reg64 kX[2] = {Xbyak::Reg64(Xbyak::Operand::R8),
                                Xbyak::Reg64(Xbyak::Operand::RBX)};
constexpr Xbyak::Reg64 kXStride(Xbyak::Operand::RCX);  // 64: a row of a step
constexpr Xbyak::Reg64 kPanel(Xbyak::Operand::R9);
// 128: the rows of the panel and of the stack rows tilestored writes.
constexpr Xbyak::Reg64 kRowStride(Xbyak::Operand::RDX);
constexpr Xbyak::Reg64 kStepsLeft(Xbyak::Operand::R14);
constexpr Xbyak::Reg64 kGroupsLeft(Xbyak::Operand::R13);
// The group's meta and x sums (the group ends reach one group back by
// offsets).
constexpr Xbyak::Reg64 kMeta(Xbyak::Operand::R10);
constexpr Xbyak::Reg64 kSums[2] = {Xbyak::Reg64(Xbyak::Operand::R15),
                                   Xbyak::Reg64(Xbyak::Operand::R11)};
constexpr Xbyak::Reg64 kAcc(Xbyak::Operand::R12);  // acc, column 0
// Walkers of a K-step loop (segments too long to unroll); free otherwise.
constexpr Xbyak::Reg64 kXWalk(Xbyak::Operand::RSI);
constexpr Xbyak::Reg64 kPanelWalk(Xbyak::Operand::RAX);
constexpr int64_t kMaxUnrolledSteps = 8;
// The final stores (the K loop's registers are free by then).
constexpr Xbyak::Reg64 kY(Xbyak::Operand::RSI);
constexpr Xbyak::Reg64 kBias(Xbyak::Operand::RBX);
constexpr Xbyak::Reg64 kOperands[2] = {Xbyak::Reg64(Xbyak::Operand::R8),
                                       Xbyak::Reg64(Xbyak::Operand::R9)};
// Vector registers of the group end: C and the row's sum, then the
// scales and float zero points of the pair's two vectors (the final
// stores use 0-5).
constexpr int kVecC = 0, kVecSum = 1, kVecScale = 6, kVecZf = 8;
// A K step of packed x (32 rows of 32 bf16), a K step of one column
// pair's panel (16 k pairs: 2 KiB, as a step of x), a group's x sums (32
// f32).
constexpr int64_t kXStepBytes = kW4a16AmxMaxRows * kW4a16AmxKStep * 2;
constexpr int64_t kBStepBytes = kW4a16AmxKStep / 2 * kW4a16AmxPanelRowBytes;
constexpr int64_t kSumsGroupBytes = kW4a16AmxMaxRows * 4;

Tmm Tile(int i) { return Tmm(i); }

}  // namespace

absl::Status CheckW4a16AmxConfig(const W4a16AmxConfig& c) {
  if (c.out_dtype != DType::kF32 && c.out_dtype != DType::kBF16) {
    return absl::InvalidArgumentError("output must be f32 or bf16");
  }
  if (c.nr <= 0 || c.nr % 32 != 0 || c.nr > 256 || c.n <= 0 || c.n > c.nr) {
    return absl::InvalidArgumentError(
        absl::StrCat("W4A16 AMX block: NB ", c.nr,
                     " (a multiple of 32 up to 256), ", c.n, " columns"));
  }
  if (c.row_blocks != 1 && c.row_blocks != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("W4A16 AMX row blocks: ", c.row_blocks, " (1 or 2)"));
  }
  if (c.epilogue.silu_mul && (c.out_n <= 0 || 2 * c.out_n > c.n)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "silu_mul AMX block: ", c.out_n, " output columns of ", c.n));
  }
  if (c.scaled && c.float_zero) {
    return absl::InvalidArgumentError(
        "scaled panels hold float zero points in the weights");
  }
  if (c.u4 && (c.float_zero || c.meta_dtype != DType::kF32)) {
    return absl::InvalidArgumentError(
        "integer zero points come with f32 meta and no float zero points");
  }
  return MakeW4a16AmxPlan(c.mr, c.group_size).status();
}

int64_t W4a16AmxConfig::MetaStride() const {
  if (per_channel || scaled) return 0;
  return int64_t{nr} * static_cast<int64_t>(DTypeSize(meta_dtype)) *
         MetaVectorsPerGroup(false, u4 || float_zero);
}

W4a16AmxConfig W4a16AmxConfig::Canonical() const {
  W4a16AmxConfig c = *this;
  if (!c.epilogue.silu_mul) c.out_n = 0;
  if (c.scaled) {
    c.u4 = c.float_zero = c.per_channel = false;
    c.meta_dtype = DType::kF32;
  }
  return c;
}

KernelName W4a16AmxConfig::NameParts() const {
  const W4a16AmxConfig& c = *this;
  KernelName key;
  key.family = KernelFamily::kW4a16Amx;
  key.isa = IsaTier::kAmx;
  key.act_dtype = DType::kBF16;
  key.out_dtype = c.out_dtype;
  key.float_zero = c.float_zero;
  key.group_size = c.group_size;
  key.weight_type = c.u4 ? WeightType::kU4 : WeightType::kS4;
  key.per_channel = c.per_channel;
  key.round_weights_bf16 = c.scaled;
  key.bias = c.bias;
  key.mr = c.mr;
  key.row_blocks = c.row_blocks;
  key.nr = c.nr;
  key.n = c.n;
  key.meta_dtype = c.meta_dtype;
  SetNameEpilogue(&key, c.epilogue);
  key.out_n = c.epilogue.silu_mul ? c.out_n : 0;
  return key;
}

W4a16AmxGenerator::W4a16AmxGenerator(const W4a16AmxConfig& config)
    // Checked (CheckW4a16AmxConfig) before a generator is made.
    : Generator(config.name()),
      config_(config),
      plan_(*MakeW4a16AmxPlan(config.mr, config.group_size)),
      vec_(this, IsaTier::kAvx512Bf16) {}

bool W4a16AmxGenerator::PairHasOutput(int vp) const {
  return config_.epilogue.silu_mul ? int64_t{vp} * 16 < config_.out_n
                                   : int64_t{vp} * 32 < config_.n;
}

void W4a16AmxGenerator::Generate() {
  const Xbyak::Reg64 args(kArg1);
  std::vector<int> pairs;  // the column pairs with output columns
  for (int vp = 0; vp < config_.nr / 32; ++vp) {
    if (PairHasOutput(vp)) pairs.push_back(vp);
  }
  Xbyak::Label tile_config;
  Preamble();
  // The C tiles' stack rows, 64-byte aligned.
  mov(rbp, rsp);
  sub(rsp, kW4a16AmxMaxRows * W4a16AmxPlan::kStackRowBytes);
  and_(rsp, -64);
  Xbyak::Label configured;
  test(qword[args + offsetof(W4a16AmxArgs, flags)],
       W4a16AmxArgs::kTilesConfigured);
  jnz(configured, T_NEAR);
  ldtilecfg(ptr[rip + tile_config]);
  L(configured);
  const int blocks = config_.row_blocks;
  mov(kX[0], ptr[args + offsetof(W4a16AmxArgs, x)]);
  if (blocks == 2) {
    mov(kX[1], kX[0]);
    add(kX[1], ptr[args + offsetof(W4a16AmxArgs, x_block_bytes)]);
  }
  mov(kXStride, kW4a16AmxKStep * 2);
  if (config_.float_zero) {
    mov(kSums[0], ptr[args + offsetof(W4a16AmxArgs, x_sums)]);
    if (blocks == 2) {
      mov(kSums[1], kSums[0]);
      add(kSums[1], ptr[args + offsetof(W4a16AmxArgs, x_sums_block_bytes)]);
    }
  }
  mov(kPanel, ptr[args + offsetof(W4a16AmxArgs, panel)]);
  mov(kRowStride, kW4a16AmxPanelRowBytes);
  static_assert(kW4a16AmxPanelRowBytes == W4a16AmxPlan::kStackRowBytes);
  mov(kMeta, ptr[args + offsetof(W4a16AmxArgs, meta)]);
  mov(kAcc, ptr[args + offsetof(W4a16AmxArgs, acc)]);
  Xbyak::Label has_acc;
  test(qword[args + offsetof(W4a16AmxArgs, flags)], W4a16AmxArgs::kLoadAcc);
  jnz(has_acc, T_NEAR);
  vpxord(Zmm(kVecC), Zmm(kVecC), Zmm(kVecC));
  for (int rb = 0; rb < blocks; ++rb) {
    for (const int vp : pairs) {
      for (int r = 0; r < config_.mr; ++r) {
        for (int h = 0; h < 2; ++h) {
          vmovups(ptr[kAcc + AccOffset(vp, rb, r, h)], Zmm(kVecC));
        }
      }
    }
  }
  L(has_acc);

  // Per group, per column pair, per row block (a "unit"): its tile
  // products. The previous unit's C tiles go to the stack inside this
  // unit's first K step, each just before its first product here (tiles
  // are not renamed: storing all four, then zeroing them, stalls the tile
  // unit until the last product ends), and the previous unit's group end
  // runs in parts behind this unit's steps. The pairs of a group share its
  // A rows, which stay in L1 between them, and a pair's row blocks its B
  // tiles.
  std::vector<Unit> units;
  for (const int vp : pairs) {
    for (int rb = 0; rb < blocks; ++rb) units.push_back({vp, rb});
  }
  Xbyak::Label loop;
  mov(kGroupsLeft, ptr[args + offsetof(W4a16AmxArgs, groups)]);
  L(loop);
  for (size_t i = 0; i < units.size(); ++i) {
    // The unit before the first is the previous group's last (none before
    // the first group: its parts are skipped).
    const PrevUnit prev =
        i > 0 ? PrevUnit{units[i - 1], 0} : PrevUnit{units.back(), -1};
    EmitUnit(units[i], prev);
  }
  for (int rb = 0; rb < blocks; ++rb) {
    add(kX[rb], static_cast<uint32_t>(plan_.k_steps * kXStepBytes));
    if (config_.float_zero) add(kSums[rb], kSumsGroupBytes);
  }
  add(kPanel, static_cast<uint32_t>(config_.group_size * config_.nr * 2));
  if (config_.MetaStride() != 0) add(kMeta, config_.MetaStride());
  dec(kGroupsLeft);
  jnz(loop, T_NEAR);
  EmitStoreTiles();
  EmitGroupEnd(units.back(), -1, 0, config_.mr);

  Xbyak::Label done;
  test(qword[args + offsetof(W4a16AmxArgs, flags)], W4a16AmxArgs::kFinal);
  jz(done, T_NEAR);
  for (const int vp : pairs) EmitFinalStores(vp);
  L(done);
  // Each calling thread leaves no tile state behind, unless its next call
  // is to find them configured.
  Xbyak::Label keep;
  test(qword[args + offsetof(W4a16AmxArgs, flags)], W4a16AmxArgs::kKeepTiles);
  jnz(keep, T_NEAR);
  tilerelease();
  L(keep);
  mov(rsp, rbp);
  Postamble();
  align(64);
  L(tile_config);
  for (const uint8_t byte : plan_.TileConfig()) db(byte);
  pool_.Emit(this);
}

// C[rt][h] = sum over the group's K steps of A[rt] x B[h] for column pair
// vp, the four products of a step interleaved so that their chains hide
// each other's latency; the first step also stores and zeroes the
// previous unit's C tiles, and the previous unit's group end follows the
// steps in parts. The cursors stay at the group's start: the steps are
// unrolled, or (long per-channel segments) walk copies of them.
void W4a16AmxGenerator::EmitUnit(const Unit& u, const PrevUnit& prev) {
  const bool unrolled = plan_.k_steps <= kMaxUnrolledSteps;
  // Rows of the previous unit's group end behind each step.
  const int64_t parts = unrolled ? plan_.k_steps : 1;
  auto group_end_part = [&](int64_t part) {
    const GroupEndRows rows = GroupEndPart(config_.mr, part, parts);
    if (rows.begin == rows.end) return;
    Xbyak::Label skip;
    // The previous group's unit: none before the first group.
    if (prev.group == -1) {
      cmp(kGroupsLeft,
          ptr[Xbyak::Reg64(kArg1) + offsetof(W4a16AmxArgs, groups)]);
      je(skip, T_NEAR);
    }
    EmitGroupEnd(prev.unit, prev.group, rows.begin, rows.end);
    L(skip);
  };
  const Xbyak::Reg64& x = kX[u.rb];
  EmitStep(u.vp, 0, x, kPanel, /*drain=*/true);
  if (unrolled) {
    group_end_part(0);
    for (int64_t s = 1; s < plan_.k_steps; ++s) {
      EmitStep(u.vp, s, x, kPanel, /*drain=*/false);
      group_end_part(s);
    }
    return;
  }
  group_end_part(0);
  lea(kXWalk, ptr[x + kXStepBytes]);
  lea(kPanelWalk, ptr[kPanel + kBStepBytes]);
  Xbyak::Label loop;
  mov(kStepsLeft, plan_.k_steps - 1);
  L(loop);
  EmitStep(u.vp, 0, kXWalk, kPanelWalk, /*drain=*/false);
  add(kXWalk, kXStepBytes);
  add(kPanelWalk, static_cast<uint32_t>(kBStepBytes));
  dec(kStepsLeft);
  jnz(loop, T_NEAR);
}

// K step s of column pair vp from the cursors x and b. With `drain` each
// C tile is first stored to its stack rows and zeroed, just before its
// first product, in the order the products end.
void W4a16AmxGenerator::EmitStep(int vp, int64_t s, const Xbyak::Reg64& x,
                                 const Xbyak::Reg64& b, bool drain) {
  const int rts = plan_.row_tiles;
  const int64_t group_pairs = config_.group_size / 2;
  auto load_a = [&](int rt) {
    tileloadd(Tile(W4a16AmxPlan::kA + rt),
              ptr[x + kXStride + (s * kXStepBytes + rt * kXStepBytes / 2)]);
  };
  auto load_b = [&](int h) {
    tileloadd(Tile(W4a16AmxPlan::kB + h),
              ptr[b + kRowStride +
                  (W4a16AmxPanelOffset(group_pairs, vp, h) + s * kBStepBytes)]);
  };
  auto dot = [&](int rt, int h) {
    const Tmm c = Tile(W4a16AmxPlan::kC + 2 * rt + h);
    if (drain) {
      tilestored(ptr[rsp + kRowStride + StackOffset(16 * rt, h)], c);
      tilezero(c);
    }
    tdpbf16ps(c, Tile(W4a16AmxPlan::kA + rt), Tile(W4a16AmxPlan::kB + h));
  };
  EmitTileStepOrder(rts, drain, load_a, load_b, dot);
}

// Row r of C at rsp + r * 128: half 0, then half 1.
void W4a16AmxGenerator::EmitStoreTiles() {
  for (int rt = 0; rt < plan_.row_tiles; ++rt) {
    for (int h = 0; h < 2; ++h) {
      tilestored(ptr[rsp + kRowStride + StackOffset(16 * rt, h)],
                 Tile(W4a16AmxPlan::kC + 2 * rt + h));
    }
  }
}

void W4a16AmxGenerator::EmitGroupEnd(const Unit& u, int group, int r0, int r1) {
  const int vp = u.vp;
  const int ms = static_cast<int>(DTypeSize(config_.meta_dtype));
  if (config_.scaled) {
    // The weights carry their scales: acc += C.
    for (int r = r0; r < r1; ++r) {
      for (int h = 0; h < 2; ++h) {
        const Zmm c(kVecC + (h == 0 ? 0 : 2));
        const Xbyak::Address acc = ptr[kAcc + AccOffset(vp, u.rb, r, h)];
        vmovups(c, ptr[rsp + StackOffset(r, h)]);
        vaddps(c, c, acc);
        vmovups(acc, c);
      }
    }
    return;
  }
  const bool fz = config_.float_zero;
  const int64_t meta = group * config_.MetaStride();
  for (int h = 0; h < 2; ++h) {
    const int64_t col = int64_t{2 * vp + h} * 16;
    EmitLoadWidenedF32(this, config_.meta_dtype, ptr[kMeta + meta + col * ms],
                       Zmm(kVecScale + h));
    if (fz) {
      EmitLoadWidenedF32(this, config_.meta_dtype,
                         ptr[kMeta + meta + (config_.nr + col) * ms],
                         Zmm(kVecZf + h));
    }
  }
  for (int r = r0; r < r1; ++r) {
    if (fz) {
      vbroadcastss(Zmm(kVecSum),
                   ptr[kSums[u.rb] + (group * kSumsGroupBytes + r * 4)]);
    }
    for (int h = 0; h < 2; ++h) {
      const Zmm c(kVecC + (h == 0 ? 0 : 2));
      const Xbyak::Address acc = ptr[kAcc + AccOffset(vp, u.rb, r, h)];
      vmovups(c, ptr[rsp + StackOffset(r, h)]);
      vfmadd213ps(c, Zmm(kVecScale + h), acc);
      if (fz) vfmadd231ps(c, Zmm(kVecZf + h), Zmm(kVecSum));
      vmovups(acc, c);
    }
  }
}

void W4a16AmxGenerator::EmitFinalStores(int vp) {
  const Xbyak::Reg64 args(kArg1);
  const bool pair = config_.epilogue.silu_mul;
  mov(kY, ptr[args + offsetof(W4a16AmxArgs, y)]);
  if (config_.bias) mov(kBias, ptr[args + offsetof(W4a16AmxArgs, bias)]);
  for (int i = 0; i < config_.epilogue.num_binary; ++i) {
    mov(kOperands[i], ptr[args + offsetof(W4a16AmxArgs, ep) + 8 * i]);
  }
  const EpilogueEmitter ep(this, vec_, &pool_, config_.epilogue);
  EpilogueEmitter::TileStores s;
  // The row blocks' rows in turn: EmitTileStores steps y and the operands
  // a row at a time, so the second block's start where the first's end.
  s.rows = config_.row_blocks * config_.mr;
  s.out_vectors = pair ? 1 : 2;
  s.first_vector = pair ? vp : 2 * vp;
  s.out_cols = pair ? config_.out_n : config_.n;
  s.value = [&](const Xmm& dst, int r, int v) {
    vmovups(dst, ptr[kAcc + AccOffset(vp, r / config_.mr, r % config_.mr, v)]);
    if (config_.bias) vaddps(dst, dst, ptr[kBias + (2 * vp + v) * 64]);
  };
  s.y = kY;
  s.ldy_at = args + offsetof(W4a16AmxArgs, ldy_bytes);
  s.ep_ld_at = args + offsetof(W4a16AmxArgs, ep_ld_bytes);
  s.operands = kOperands;
  s.out_dtype = config_.out_dtype;
  s.gpr_tmp = eax;
  ep.EmitTileStores(s);
}

}  // namespace w4jit::internal
