// The DA8W4 kernel's driver: the frame, the step and group loops, the
// chunks of quads with their prefetch, the group end shared by every ISA
// (and the AMX kernel) and the epilogue. The ISAs' dot products are in
// jit/da8w4_gemm_avx2_steps.cc and jit/da8w4_gemm_vnni_steps.cc; the
// registers are placed by the plan (jit/da8w4_gemm_plan.h) and the GPR
// roles named in the class. The config's check and name are in
// da8w4_gemm_config.cc.
#include "jit/da8w4_gemm_generator.h"

#include <algorithm>
#include <cstddef>
#include <functional>

#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;

}  // namespace

Da8w4GemmGenerator::Da8w4GemmGenerator(const Da8w4GemmConfig& config)
    // Checked (CheckDa8w4GemmConfig) before a generator is made.
    : Da8w4GemmGenerator(config,
                         *MakeDa8w4GemmPlan(config.isa, config.mr, config.nblk,
                                            config.decoded)) {}

Da8w4GemmGenerator::Da8w4GemmGenerator(const Da8w4GemmConfig& config,
                                       const Da8w4GemmPlan& plan)
    : Generator(config.name(), 256 * 1024),
      cfg_(config),
      plan_(plan),
      vec_(this, config.isa),
      qa_stride_(QaRowStride(config.layout.k)),
      sums_stride_(SumsRowStride(config.layout.groups())),
      out_bytes_(config.out_dtype == DType::kF32 ? 4 : 2) {}

int64_t Da8w4GemmGenerator::QuadStride() const {
  return (cfg_.decoded ? 2 : 1) * cfg_.layout.quad_bytes();
}

int64_t Da8w4GemmGenerator::BlockStride() const {
  return cfg_.decoded ? cfg_.layout.decoded_block_bytes()
                      : cfg_.layout.block_weight_bytes();
}

// The stack holds the int32 tile (AVX2), the f32 tile and the per-step
// pointers (Slot).
void Da8w4GemmGenerator::Generate() {
  EmitKernel([] {}, [&] { EmitStep(); }, [] {});
}

void Da8w4GemmGenerator::EmitKernel(const std::function<void()>& enter,
                                    const std::function<void()>& step,
                                    const std::function<void()>& leave) {
  Preamble();
  mov(kSavedRsp, rsp);
  sub(rsp, Local(kFrameSlots));
  and_(rsp, -64);
  auto slot = [&](int at, size_t arg) {
    mov(kScratch, ptr[kArgs + arg]);
    mov(ptr[rsp + Local(at)], kScratch);
  };
  slot(kWSlot, offsetof(Da8w4GemmArgs, w));
  slot(kScalesSlot, offsetof(Da8w4GemmArgs, scales));
  slot(kZerosSlot, offsetof(Da8w4GemmArgs, zeros));
  slot(kBiasSlot, offsetof(Da8w4GemmArgs, bias));
  slot(kYSlot, offsetof(Da8w4GemmArgs, y));
  for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
    slot(kEpOperandSlot + i, offsetof(Da8w4GemmArgs, ep) + 8 * i);
  }
  // AVX-512 in-loop unpacking keeps its 0x0F mask in a register.
  if (plan_.mask >= 0) {
    vmovups(vec_.Vec(plan_.mask), pool_.Splat32(0x0F0F0F0F));
  }
  enter();
  mov(kStepsLeft, ptr[kArgs + offsetof(Da8w4GemmArgs, steps)]);
  Xbyak::Label step_loop;
  L(step_loop);
  step();
  dec(kStepsLeft);
  jnz(step_loop, T_NEAR);
  leave();
  mov(rsp, kSavedRsp);
  Postamble();
  pool_.Emit(this);
}

void Da8w4GemmGenerator::EmitStep() {
  EmitStepStart();
  EmitGroups([&] { EmitGroup(); });
  EmitEpilogue();
  EmitStepEnd();
}

void Da8w4GemmGenerator::EmitStepStart() {
  mov(kQa, ptr[kArgs + offsetof(Da8w4GemmArgs, qa)]);
  mov(kW, ptr[rsp + Local(kWSlot)]);
  mov(kScales, ptr[rsp + Local(kScalesSlot)]);
  mov(kZeros, ptr[rsp + Local(kZerosSlot)]);
  mov(kSums, ptr[kArgs + offsetof(Da8w4GemmArgs, sums)]);
  if (cfg_.act_per_group) {
    mov(kSaCursor, ptr[kArgs + offsetof(Da8w4GemmArgs, sa)]);
  }
  const Xmm zero = vec_.Vec(plan_.zero);
  if (vec_.avx512()) {
    vpxord(zero, zero, zero);
  } else {
    vpxor(zero, zero, zero);
  }
  for (int i = 0; i < NumAcc(); ++i) vmovaps(ptr[rsp + F32Tile(i)], zero);
  // VNNI accumulates in registers (AMX in tiles, its plan's vnni false;
  // AVX2 from each chunk's first product).
  if (plan_.vnni) {
    for (int i = 0; i < NumAcc(); ++i) vmovaps(vec_.Vec(i), zero);
  }
}

void Da8w4GemmGenerator::EmitGroups(const std::function<void()>& group) {
  const Da8w4Layout& lay = cfg_.layout;
  const int64_t groups = lay.groups();
  if (groups == 1) {
    group();
  } else {
    Xbyak::Label group_loop;
    mov(kGroupsLeft, groups);
    L(group_loop);
    group();
    add(kScales, static_cast<uint32_t>(lay.group_scale_bytes()));
    add(kZeros, lay.block_cols() * 4);
    add(kSums, 4);
    if (cfg_.act_per_group) add(kSaCursor, 4);
    dec(kGroupsLeft);
    jnz(group_loop, T_NEAR);
  }
}

void Da8w4GemmGenerator::EmitStepEnd() {
  const Da8w4Layout& lay = cfg_.layout;
  // Next nblk blocks.
  const int64_t nblk = cfg_.nblk;
  auto advance = [&](int at, int64_t bytes) {
    mov(kScratch, bytes);
    add(ptr[rsp + Local(at)], kScratch);
  };
  advance(kWSlot, nblk * BlockStride());
  advance(kScalesSlot, nblk * lay.block_scale_bytes());
  advance(kZerosSlot, nblk * lay.block_param_bytes());
  advance(kBiasSlot, nblk * lay.block_cols() * 4);
  advance(kYSlot, nblk * OutBlockCols() * out_bytes_);
  const EpilogueEmitter ep(this, vec_, &pool_, cfg_.epilogue);
  for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
    advance(kEpOperandSlot + i, nblk * OutBlockCols() * ep.OperandSize(i));
  }
}

int Da8w4GemmGenerator::OutBlockCols() const {
  return cfg_.epilogue.silu_mul ? cfg_.layout.lanes : cfg_.layout.block_cols();
}

int Da8w4GemmGenerator::OutCols(int blk) const {
  const Da8w4Layout& lay = cfg_.layout;
  if (!cfg_.n_tail || blk != cfg_.nblk - 1) return OutBlockCols();
  if (cfg_.epilogue.silu_mul) {
    return static_cast<int>(cfg_.out_n - (lay.blocks() - 1) * lay.lanes);
  }
  return lay.last_block_cols();
}

void Da8w4GemmGenerator::EmitGroup() {
  if (plan_.vnni) {
    EmitVnniGroup();
  } else {
    EmitAvx2Group();
  }
}

void Da8w4GemmGenerator::EmitChunkLoop(int64_t count,
                                       const std::function<void()>& body) {
  if (count == 1) {
    body();
  } else if (count > 1) {
    Xbyak::Label loop;
    mov(kChunksLeft, count);
    L(loop);
    body();
    dec(kChunksLeft);
    jnz(loop, T_NEAR);
  }
}

void Da8w4GemmGenerator::EmitChunk(int quads) {
  if (!cfg_.decoded) {
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      EmitStreamPrefetch(this, kW + blk * BlockStride(), 0,
                         quads * QuadStride(), cfg_.prefetch);
    }
  }
  for (int q = 0; q < quads; ++q) {
    if (!plan_.vnni) {
      EmitAvx2Quad(q, q == 0);
    } else if (cfg_.decoded) {
      EmitQuadDecodedVnni(q);
    } else {
      EmitVnniQuad(q);
    }
  }
  add(kQa, quads * 4);
  add(kW, quads * QuadStride());
}

void Da8w4GemmGenerator::LoadRowSum(int row, const Xmm& dst) {
  vpbroadcastd(dst, ptr[kSums + row * sums_stride_]);
  // s4: z = 8 for every column, so z * sum is a shift.
  if (cfg_.weight_type == WeightType::kS4) vpslld(dst, dst, 3);
}

void Da8w4GemmGenerator::EmitGroupEndOne(int row, int blk, int half,
                                         const Xmm& acc, const Xmm& row_sum,
                                         const Xmm& tmp,
                                         const Xbyak::Operand& row_sa,
                                         const Xmm* scale, const Xmm* zeros) {
  const Da8w4Layout& lay = cfg_.layout;
  const int64_t param = blk * lay.block_param_bytes() + half * vec_.bytes();
  if (cfg_.weight_type == WeightType::kU4) {
    if (zeros != nullptr) {
      vpmulld(tmp, row_sum, *zeros);
    } else {
      vpmulld(tmp, row_sum, ptr[kZeros + param]);
    }
    vpsubd(acc, acc, tmp);
  } else if (!zero_point_in_weights_) {
    vpsubd(acc, acc, row_sum);
  }
  vcvtdq2ps(acc, acc);
  if (cfg_.act_per_group) vmulps(acc, acc, row_sa);
  // tile += acc * s, one rounding (the scale widened exactly first).
  const int tile = F32Tile(AccIndex(row, blk, half));
  if (scale == nullptr) {
    EmitLoadWidenedF32(this, lay.scale_dtype,
                       ptr[kScales + blk * lay.block_scale_bytes() +
                           int64_t{half} * lay.lanes * lay.scale_size()],
                       tmp);
  }
  vfmadd213ps(acc, scale != nullptr ? *scale : tmp, ptr[rsp + tile]);
  vmovaps(ptr[rsp + tile], acc);
}

// y = epilogue(tile * sa (+ bias)), or per group epilogue(tile (+ bias)),
// stored as f32 or bf16; only real output columns. With silu_mul a block's
// two halves (gate, up) make one output vector.
void Da8w4GemmGenerator::EmitEpilogue() {
  const Da8w4Layout& lay = cfg_.layout;
  const EpilogueEmitter ep(this, vec_, &pool_, cfg_.epilogue);
  const Xmm sa = vec_.Vec(plan_.ep_sa), v = vec_.Vec(plan_.ep_v),
            up = vec_.Vec(plan_.ep_up);
  const EpilogueEmitter::Temps t = {
      vec_.Vec(plan_.ep_tmp), vec_.Vec(plan_.ep_tmp + 1),
      vec_.Vec(plan_.ep_tmp + 2), vec_.Vec(plan_.ep_tmp + 3)};
  const Xbyak::Reg64 operands[2] = {kEpOperand0, kEpOperand1};
  mov(kEpSa, ptr[kArgs + offsetof(Da8w4GemmArgs, sa)]);
  mov(kEpY, ptr[rsp + Local(kYSlot)]);
  mov(kEpLdy, ptr[kArgs + offsetof(Da8w4GemmArgs, ldy_bytes)]);
  mov(kEpBias, ptr[rsp + Local(kBiasSlot)]);
  for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
    mov(operands[i], ptr[rsp + Local(kEpOperandSlot + i)]);
  }
  // v = sa * tile (+ bias) of (row, block, half); per group tile (+ bias).
  auto value = [&](const Xmm& dst, int r, int blk, int half) {
    const Xbyak::Address tile = ptr[rsp + F32Tile(AccIndex(r, blk, half))];
    if (cfg_.act_per_group) {
      vmovaps(dst, tile);
    } else {
      vmulps(dst, sa, tile);
    }
    const int col = blk * lay.block_cols() + half * lay.lanes;
    if (cfg_.bias) vaddps(dst, dst, ptr[kEpBias + col * 4]);
  };
  auto store = [&](int col, int count) {
    if (cfg_.out_dtype == DType::kF32) {
      vec_.StoreF32(kEpY + col * 4, v, count, t[0], kEpStoreTmp32);
    } else {
      vec_.StoreBf16(kEpY + col * 2, v, count, t[0], t[1], kEpStoreTmp32,
                     &pool_);
    }
  };
  for (int r = 0; r < cfg_.mr; ++r) {
    if (!cfg_.act_per_group) vbroadcastss(sa, ptr[kEpSa + 4 * r]);
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      const int cols = OutCols(blk);
      if (cfg_.epilogue.silu_mul) {
        value(v, r, blk, 0);
        value(up, r, blk, 1);
        const int col = blk * lay.lanes;
        ep.Apply(v, &up, operands, col, cols, t);
        store(col, cols);
        continue;
      }
      for (int half = 0; half < 2; ++half) {
        const int count = std::min(lay.lanes, cols - half * lay.lanes);
        if (count <= 0) continue;
        value(v, r, blk, half);
        const int col = blk * lay.block_cols() + half * lay.lanes;
        if (ep.active()) ep.Apply(v, nullptr, operands, col, count, t);
        store(col, count);
      }
    }
    if (r + 1 < cfg_.mr) {
      add(kEpY, kEpLdy);
      for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
        add(operands[i],
            ptr[kArgs + offsetof(Da8w4GemmArgs, ep_ld_bytes) + 8 * i]);
      }
    }
  }
}

}  // namespace w4jit::internal
