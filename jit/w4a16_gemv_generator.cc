#include "jit/w4a16_gemv_generator.h"

#include <algorithm>
#include <cstddef>

#include "base/numeric.h"
#include "jit/w4a16_gemv_plan.h"
#include "jit/w4a16_layout.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;
using Xbyak::util::ptr;

// Register roles: jit/w4a16_gemv_plan.h.
using w4a16_gemv_gpr::kArgs;
using w4a16_gemv_gpr::kBias;
using w4a16_gemv_gpr::kBlock;
using w4a16_gemv_gpr::kBlockMeta;
using w4a16_gemv_gpr::kBlockW;
using w4a16_gemv_gpr::kBlockY;
using w4a16_gemv_gpr::kEpOperand0;
using w4a16_gemv_gpr::kEpOperand1;
using w4a16_gemv_gpr::kEpScratch;
using w4a16_gemv_gpr::kGroupsLeft;
using w4a16_gemv_gpr::kMeta;
using w4a16_gemv_gpr::kRowsLeft;
using w4a16_gemv_gpr::kRowX;
using w4a16_gemv_gpr::kRowY;
using w4a16_gemv_gpr::kSavedRsp;
using w4a16_gemv_gpr::kScratch;
using w4a16_gemv_gpr::kStepsLeft;
using w4a16_gemv_gpr::kStoreTmp32;
using w4a16_gemv_gpr::kStoreY;
using w4a16_gemv_gpr::kW;
using w4a16_gemv_gpr::kX;

// Steps (k pairs for FMA, k octets for the dot flavour) per unrolled loop
// iteration: 8 k per iteration either way, enough to amortise the loop
// overhead without bloating the code for each row-tile height.
constexpr int kUnrollFma = 4;
constexpr int kUnrollDot = 1;

int OutSize(DType t) { return static_cast<int>(DTypeSize(t)); }

}  // namespace

W4a16GemvGenerator::W4a16GemvGenerator(const W4a16GemvConfig& config)
    // Every row-tile height and column tile gets its own unrolled epilogue:
    // tall zmm tiles with a gelu_erf and two operands need ~0.5 MB.
    : Generator(config.name(),
                !config.epilogue.empty() ? 2 * 1024 * 1024 : 256 * 1024),
      config_(config),
      epilogue_(config.epilogue),
      vec_(this, config.isa),
      dot_(config.flavor == Flavor::kBf16Dot),
      lanes_(vec_.lanes32()),
      nv_(config.nr / vec_.lanes32()),
      tv_(config.tile_vectors == 0 ? nv_ : config.tile_vectors),
      nb_(config.nr),
      groups_(config.k / config.group_size),
      steps_per_group_(
          static_cast<int>(config.group_size / W4a16GemvStepK(config.flavor))),
      out_size_(OutSize(config.out_dtype)) {}

void W4a16GemvGenerator::Generate() {
  Preamble();
  mov(kSavedRsp, rsp);
  if (groups_ > 1 || !epilogue_.empty()) {
    sub(rsp, static_cast<uint32_t>(config_.mr * nv_ * vec_.bytes()));
    and_(rsp, -64);
  }
  mov(kBlockW, ptr[kArgs + offsetof(W4a16GemvArgs, w)]);
  mov(kBlockMeta, ptr[kArgs + offsetof(W4a16GemvArgs, meta)]);
  mov(kBlockY, ptr[kArgs + offsetof(W4a16GemvArgs, y)]);
  mov(kBlock, ptr[kArgs + offsetof(W4a16GemvArgs, block_begin)]);
  Xbyak::Label block_loop, next_block, done;
  cmp(kBlock, ptr[kArgs + offsetof(W4a16GemvArgs, block_end)]);
  jge(done, T_NEAR);

  L(block_loop);
  mov(kRowX, ptr[kArgs + offsetof(W4a16GemvArgs, x)]);
  mov(kRowsLeft, ptr[kArgs + offsetof(W4a16GemvArgs, m)]);
  mov(kRowY, kBlockY);
  const int64_t blocks = (config_.n + nb_ - 1) / nb_;
  // The last block has fewer output columns than the others.
  const bool has_tail = (epilogue_.silu_mul ? config_.out_n % OutBlockCols()
                                            : config_.n % nb_) != 0;
  if (has_tail) {
    Xbyak::Label full;
    cmp(kBlock, static_cast<uint32_t>(blocks - 1));
    jne(full, T_NEAR);
    EmitRowLoop(/*tail=*/true);
    jmp(next_block, T_NEAR);
    L(full);
  }
  EmitRowLoop(/*tail=*/false);

  L(next_block);
  add(kBlockW, static_cast<uint32_t>(config_.k / 2 * nb_));
  add(kBlockMeta, static_cast<uint32_t>(groups_ * MetaGroupBytes()));
  add(kBlockY, static_cast<uint32_t>(OutBlockCols() * out_size_));
  inc(kBlock);
  cmp(kBlock, ptr[kArgs + offsetof(W4a16GemvArgs, block_end)]);
  jl(block_loop, T_NEAR);

  L(done);
  mov(rsp, kSavedRsp);
  Postamble();
  pool_.Emit(this);
}

int64_t W4a16GemvGenerator::StepWeightBytes() const {
  return W4a16GemvStepK(config_.flavor) / 2 * nb_;  // two nibbles a byte
}

int64_t W4a16GemvGenerator::OutBlockCols() const {
  return epilogue_.silu_mul ? nb_ / 2 : nb_;
}

int64_t W4a16GemvGenerator::MetaGroupBytes() const {
  return nb_ * static_cast<int64_t>(DTypeSize(config_.meta_dtype)) *
         MetaVectorsPerGroup(dot_, config_.weight_type == WeightType::kU4 ||
                                       config_.float_zero);
}

int W4a16GemvGenerator::RowSlots() const {
  if (dot_) return config_.float_zero ? 1 : 0;
  return F32Slots().count();
}

int W4a16GemvGenerator::SumSlot() const {
  return dot_ ? 0 : F32Slots().sum_index();
}

void W4a16GemvGenerator::EmitRowLoop(bool tail) {
  const int mr_max = config_.mr;
  // Bytes of packed x per row: K f32, or K/2 bf16 pairs, and the groups'
  // slots.
  const int64_t x_row_bytes =
      (dot_ ? config_.k * 2 : config_.k * 4) + groups_ * RowSlots() * 4;
  EmitRowTiles(
      this, kRowsLeft, mr_max, [&](int mr) { EmitTile(mr, tail); },
      [&](int mr) {
        add(kRowX, static_cast<uint32_t>(mr * x_row_bytes));
        mov(kScratch, ptr[kArgs + offsetof(W4a16GemvArgs, ldy_bytes)]);
        imul(kScratch, kScratch, mr);
        add(kRowY, kScratch);
      });
}

void W4a16GemvGenerator::EmitTile(int mr, bool tail) {
  // The block's vectors, one tile width at a time; a tail block stops at
  // its last column.
  const int64_t last_cols = config_.n - ((config_.n - 1) / nb_) * nb_;
  for (int v0 = 0; v0 < nv_; v0 += tv_) {
    if (tail && last_cols <= int64_t{v0} * lanes_) break;
    EmitTileColumns(mr, tail, v0);
  }
}

void W4a16GemvGenerator::EmitTileColumns(int mr, bool tail, int v0) {
  // The plan exists: CheckW4a16GemvConfig asked for every tile height.
  absl::StatusOr<W4a16GemvPlan> plan = MakeW4a16GemvPlan(config_, mr);
  if (!plan.ok()) throw Xbyak::Error(Xbyak::ERR_INTERNAL);
  W4a16GemvPlan p = *plan;
  p.v0 = v0;

  // The flavour's constants in registers, reloaded per tile because the
  // stores clobber them.
  if (dot_) {
    EmitDotTileConstants(p);
  } else {
    EmitF32TileConstants(p);
  }
  if (groups_ > 1) {
    // The cross-group accumulators live on the stack.
    const Xmm z = vec_.Vec(p.t0);
    vxorps(z, z, z);
    for (int i = 0; i < mr * p.nv; ++i) {
      vmovups(ptr[rsp + i * vec_.bytes()], z);
    }
  }
  mov(kW, kBlockW);
  mov(kMeta, kBlockMeta);
  mov(kX, kRowX);
  Xbyak::Label group_loop;
  if (groups_ > 1) {
    mov(kGroupsLeft, groups_);
    L(group_loop);
  }
  if (dot_) {
    EmitDotGroupStart(p, mr);
  } else {
    EmitF32GroupStart(p, mr);
  }
  const int unroll = std::min(steps_per_group_, dot_ ? kUnrollDot : kUnrollFma);
  const int iters = steps_per_group_ / unroll;
  const int rest = steps_per_group_ % unroll;
  const int64_t w_step = StepWeightBytes();
  // Packed x per step: per row two f32 (FMA) or four bf16 pairs (dot).
  const int64_t x_step = (dot_ ? 4 : 2) * mr * 4;
  if (iters > 1) {
    Xbyak::Label loop;
    mov(kStepsLeft, iters);
    L(loop);
    EmitSteps(p, unroll, mr);
    add(kW, static_cast<uint32_t>(unroll * w_step));
    add(kX, static_cast<uint32_t>(unroll * x_step));
    dec(kStepsLeft);
    jnz(loop, T_NEAR);
  } else {
    EmitSteps(p, unroll, mr);
    add(kW, static_cast<uint32_t>(unroll * w_step));
    add(kX, static_cast<uint32_t>(unroll * x_step));
  }
  if (rest > 0) {
    EmitSteps(p, rest, mr);
    add(kW, static_cast<uint32_t>(rest * w_step));
    add(kX, static_cast<uint32_t>(rest * x_step));
  }
  EmitGroupEnd(p, mr);
  if (RowSlots() > 0) add(kX, static_cast<uint32_t>(RowSlots() * mr * 4));
  if (groups_ > 1) {
    add(kMeta, static_cast<uint32_t>(MetaGroupBytes()));
    dec(kGroupsLeft);
    jnz(group_loop, T_NEAR);
  }
  EmitStores(p, mr, tail);
}

void W4a16GemvGenerator::EmitSteps(const W4a16GemvPlan& p, int steps, int mr) {
  if (dot_) {
    EmitDotSteps(p, steps, mr);
  } else {
    EmitF32Steps(p, steps, mr);
  }
}

void W4a16GemvGenerator::EmitStepPrefetch(const W4a16GemvPlan& p, int s) {
  // Once per step of the block's stream: by the first column tile.
  if (p.v0 == 0) {
    EmitStreamPrefetch(this, kW, s * StepWeightBytes(), StepWeightBytes(),
                       config_.prefetch);
  }
}

void W4a16GemvGenerator::ZeroAccumulators(const W4a16GemvPlan& p, int mr,
                                          bool skip_k_even) {
  for (int i = 0; i < mr * p.nv * p.split; ++i) {
    if (skip_k_even && i % p.split == 0) continue;
    const Xmm a = vec_.Vec(i);
    if (vec_.avx512()) {
      vpxord(a, a, a);
    } else {
      vxorps(a, a, a);
    }
  }
}

void W4a16GemvGenerator::LoadMeta(const Xmm& dst, int64_t i) {
  const int64_t size = static_cast<int64_t>(DTypeSize(config_.meta_dtype));
  EmitLoadWidenedF32(this, config_.meta_dtype, ptr[kMeta + i * size], dst);
}

void W4a16GemvGenerator::EmitGroupEnd(const W4a16GemvPlan& p, int mr) {
  const bool fz = config_.float_zero;
  // Float zero points: the group's x sum of row r is among the slots after
  // its packed x (rdx points at them now), broadcast into t1 (free between
  // groups).
  const Xmm xsum = vec_.Vec(p.t1);
  const int sum_at = SumSlot() * mr * 4;
  // The scale, then zf, widened to f32 (t0 is free between groups too).
  const Xmm meta = vec_.Vec(p.t0);
  // zf of vector `col`, called while `meta` still holds its scale: for
  // folded zero points (the meta holds 8 - z) zf = (8 - z) * s, the f32
  // product the packing would have stored, so the same bits.
  auto load_zf = [&](int64_t col) -> Xmm {
    if (!config_.folded_zero) {
      LoadMeta(meta, nb_ + col);
      return meta;
    }
    const Xmm zf = vec_.Vec(p.zf);
    LoadMeta(zf, nb_ + col);
    vmulps(zf, zf, meta);
    return zf;
  };
  for (int r = 0; r < mr; ++r) {
    if (fz) vbroadcastss(xsum, ptr[kX + sum_at + r * 4]);
    for (int v = 0; v < p.nv; ++v) {
      const Xmm a = vec_.Vec(p.Acc(r, v, 0));
      if (p.split == 2) vaddps(a, a, vec_.Vec(p.Acc(r, v, 1)));
      const int64_t col = int64_t{p.v0 + v} * lanes_;
      if (groups_ == 1) {
        // Scaled in the stores, or here when zf * sum joins it.
        if (fz) {
          LoadMeta(meta, col);
          vmulps(a, a, meta);
          vfmadd231ps(a, xsum, load_zf(col));
        }
        continue;
      }
      // acc[r][v] += s * group_acc (+ zf * sum), one rounding each.
      const int off = (r * p.nv + v) * vec_.bytes();
      LoadMeta(meta, col);
      vfmadd213ps(a, meta, ptr[rsp + off]);
      if (fz) vfmadd231ps(a, xsum, load_zf(col));
      vmovups(ptr[rsp + off], a);
    }
  }
}

void W4a16GemvGenerator::EmitStores(const W4a16GemvPlan& p, int mr, bool tail) {
  if (!epilogue_.empty()) {
    EmitEpilogueStores(p, mr, tail);
    return;
  }
  const Xmm val = vec_.Vec(p.t0);
  const Xmm s1 = vec_.Vec(p.t1);
  const Xmm s2 = vec_.Vec(p.spare);
  const int64_t last_cols = config_.n - ((config_.n - 1) / nb_) * nb_;
  mov(kStoreY, kRowY);
  if (config_.bias) {
    mov(kBias, kBlock);
    imul(kBias, kBias, static_cast<int>(nb_ * 4));
    add(kBias, ptr[kArgs + offsetof(W4a16GemvArgs, bias)]);
  }
  for (int r = 0; r < mr; ++r) {
    for (int v = 0; v < p.nv; ++v) {
      const int c = p.v0 + v;  // the vector's place in the block
      int count = lanes_;
      if (tail) {
        count = static_cast<int>(
            std::clamp<int64_t>(last_cols - int64_t{c} * lanes_, 0, lanes_));
      }
      if (count == 0) continue;
      if (groups_ == 1 && !config_.float_zero) {
        LoadMeta(val, int64_t{c} * lanes_);
        vmulps(val, val, vec_.Vec(p.Acc(r, v, 0)));
      } else if (groups_ == 1) {
        vmovaps(val, vec_.Vec(p.Acc(r, v, 0)));  // scaled in EmitGroupEnd
      } else {
        vmovups(val, ptr[rsp + (r * p.nv + v) * vec_.bytes()]);
      }
      if (config_.bias) vaddps(val, val, ptr[kBias + c * lanes_ * 4]);
      if (config_.out_dtype == DType::kF32) {
        vec_.StoreF32(kStoreY + c * lanes_ * 4, val, count, s1, kStoreTmp32);
      } else {
        vec_.StoreBf16(kStoreY + c * lanes_ * 2, val, count, s1, s2,
                       kStoreTmp32, &pool_);
      }
    }
    if (r + 1 < mr)
      add(kStoreY, ptr[kArgs + offsetof(W4a16GemvArgs, ldy_bytes)]);
  }
}

void W4a16GemvGenerator::EmitEpilogueStores(const W4a16GemvPlan& p, int mr,
                                            bool tail) {
  // The tile's scaled sums to the stack (with groups they are there).
  if (groups_ == 1) {
    for (int r = 0; r < mr; ++r) {
      for (int v = 0; v < p.nv; ++v) {
        const Xmm a = vec_.Vec(p.Acc(r, v, 0));
        if (!config_.float_zero) {
          const Xmm scale = vec_.Vec(p.t0);
          LoadMeta(scale, int64_t{p.v0 + v} * lanes_);
          vmulps(a, a, scale);
        }
        vmovups(ptr[rsp + (r * p.nv + v) * vec_.bytes()], a);
      }
    }
  }
  const EpilogueEmitter ep(this, vec_, &pool_, epilogue_);
  // Operand rows of this tile: ep + (block - block_begin) * out block
  // bytes + (row of the tile) * ld, the row being m - rows left.
  const Xbyak::Reg64 operands[2] = {kEpOperand0, kEpOperand1};
  for (int i = 0; i < epilogue_.num_binary; ++i) {
    const Xbyak::Reg64& o = operands[i];
    mov(o, ptr[kArgs + offsetof(W4a16GemvArgs, m)]);
    sub(o, kRowsLeft);
    imul(o, ptr[kArgs + offsetof(W4a16GemvArgs, ep_ld_bytes) + 8 * i]);
    mov(kEpScratch, kBlock);
    sub(kEpScratch, ptr[kArgs + offsetof(W4a16GemvArgs, block_begin)]);
    imul(kEpScratch, kEpScratch,
         static_cast<int>(OutBlockCols() * ep.OperandSize(i)));
    add(o, kEpScratch);
    add(o, ptr[kArgs + offsetof(W4a16GemvArgs, ep) + 8 * i]);
  }
  const int64_t blocks = (config_.n + nb_ - 1) / nb_;
  const int64_t out_n = epilogue_.silu_mul ? config_.out_n : config_.n;
  // Output columns the block holds: all, or those of the last block.
  const int64_t block_out =
      tail ? out_n - (blocks - 1) * OutBlockCols() : OutBlockCols();
  mov(kStoreY, kRowY);
  if (config_.bias) {
    mov(kBias, kBlock);
    imul(kBias, kBias, static_cast<int>(nb_ * 4));
    add(kBias, ptr[kArgs + offsetof(W4a16GemvArgs, bias)]);
  }
  const bool pair = epilogue_.silu_mul;   // (gate, up) vector pairs
  const int o0 = pair ? p.v0 / 2 : p.v0;  // first output vector in the block
  EpilogueEmitter::TileStores s;
  s.rows = mr;
  s.out_vectors = pair ? p.nv / 2 : p.nv;
  s.first_vector = o0;
  s.out_cols = block_out;
  // Vector v of the tile (its place in the block p.v0 + v) of row r.
  s.value = [&](const Xmm& dst, int r, int v) {
    vmovups(dst, ptr[rsp + (r * p.nv + v) * vec_.bytes()]);
    if (config_.bias) vaddps(dst, dst, ptr[kBias + (p.v0 + v) * lanes_ * 4]);
  };
  s.y = kStoreY;
  s.ldy_at = kArgs + offsetof(W4a16GemvArgs, ldy_bytes);
  s.ep_ld_at = kArgs + offsetof(W4a16GemvArgs, ep_ld_bytes);
  s.operands = operands;
  s.out_dtype = config_.out_dtype;
  s.gpr_tmp = kStoreTmp32;
  ep.EmitTileStores(s);
}

}  // namespace w4jit::internal
