#include "jit/da8w4_gemm_generator.h"

#include <algorithm>
#include <cstddef>
#include <functional>

#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;

// The vector registers are placed by the plan (jit/da8w4_gemm_plan.h);
// the GPRs are described at Generate() and named in the class. The
// config's check and name are in da8w4_gemm_config.cc.

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

// GPRs: rdi args; the cursors and counters above (kQa .. kStepsLeft);
// rbp the entry rsp; rax, rbx, rcx, rdx, rsi scratch in the epilogue; per-group
// activation scales: rsi the sa cursor (along K) before it. The stack holds
// the int32 tile (AVX2), the f32 tile and the per-step pointers (locals).
void Da8w4GemmGenerator::Generate() {
  EmitKernel([] {}, [&] { EmitStep(); }, [] {});
}

void Da8w4GemmGenerator::EmitKernel(const std::function<void()>& enter,
                                    const std::function<void()>& step,
                                    const std::function<void()>& leave) {
  Preamble();
  mov(rbp, rsp);
  sub(rsp, Local(10));
  and_(rsp, -64);
  mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, w)]);
  mov(ptr[rsp + Local(0)], rax);
  mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, scales)]);
  mov(ptr[rsp + Local(1)], rax);
  mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, zeros)]);
  mov(ptr[rsp + Local(2)], rax);
  mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, bias)]);
  mov(ptr[rsp + Local(3)], rax);
  mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, y)]);
  mov(ptr[rsp + Local(4)], rax);
  for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
    mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, ep) + 8 * i]);
    mov(ptr[rsp + Local(5 + i)], rax);
  }
  if (vec_.avx512() && !cfg_.decoded) {
    vmovups(vec_.Vec(plan_.mask), pool_.Splat32(0x0F0F0F0F));
  }
  enter();
  mov(kStepsLeft, ptr[rdi + offsetof(Da8w4GemmArgs, steps)]);
  Xbyak::Label step_loop;
  L(step_loop);
  step();
  dec(kStepsLeft);
  jnz(step_loop, T_NEAR);
  leave();
  mov(rsp, rbp);
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
  mov(kQa, ptr[rdi + offsetof(Da8w4GemmArgs, qa)]);
  mov(kW, ptr[rsp + Local(0)]);
  mov(kScales, ptr[rsp + Local(1)]);
  mov(kZeros, ptr[rsp + Local(2)]);
  mov(kSums, ptr[rdi + offsetof(Da8w4GemmArgs, sums)]);
  if (cfg_.act_per_group) mov(rsi, ptr[rdi + offsetof(Da8w4GemmArgs, sa)]);
  // AMX: the accumulators are tiles (register 0 is free here).
  const Xmm zero = vec_.Vec(cfg_.amx ? 0 : NumAcc());
  if (vec_.avx512()) {
    vpxord(zero, zero, zero);
  } else {
    vpxor(zero, zero, zero);
  }
  for (int i = 0; i < NumAcc(); ++i) vmovaps(ptr[rsp + F32Tile(i)], zero);
  if (vec_.avx512() && !cfg_.amx) {
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
    if (cfg_.act_per_group) add(rsi, 4);
    dec(kGroupsLeft);
    jnz(group_loop, T_NEAR);
  }
}

void Da8w4GemmGenerator::EmitStepEnd() {
  const Da8w4Layout& lay = cfg_.layout;
  // Next nblk blocks.
  const int64_t nblk = cfg_.nblk;
  mov(rax, nblk * BlockStride());
  add(ptr[rsp + Local(0)], rax);
  mov(rax, nblk * lay.block_scale_bytes());
  add(ptr[rsp + Local(1)], rax);
  mov(rax, nblk * lay.block_param_bytes());
  add(ptr[rsp + Local(2)], rax);
  mov(rax, nblk * lay.block_cols() * 4);
  add(ptr[rsp + Local(3)], rax);
  mov(rax, nblk * OutBlockCols() * out_bytes_);
  add(ptr[rsp + Local(4)], rax);
  const EpilogueEmitter ep(this, vec_, &pool_, cfg_.epilogue);
  for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
    mov(rax, nblk * OutBlockCols() * ep.OperandSize(i));
    add(ptr[rsp + Local(5 + i)], rax);
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
  const int64_t gq = cfg_.layout.group_quads();
  const int chunk = cfg_.chunk_quads;
  auto chunk_loop = [&](int64_t count, const auto& body) {
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
  };
  if (vec_.avx512()) {
    // int32 accumulators hold the whole group: no flushes.
    chunk_loop(gq / chunk, [&] { EmitChunk(chunk); });
    if (gq % chunk != 0) EmitChunk(static_cast<int>(gq % chunk));
    EmitGroupEndVnni();
    return;
  }
  // AVX2: int16 partial sums of at most 8 quads, flushed into int32.
  const int64_t chunks = (gq + chunk - 1) / chunk;
  const int last = static_cast<int>(gq - (chunks - 1) * chunk);
  if (chunks == 1) {
    EmitChunk(last);
    EmitFlush(Flush::kOnly);
    return;
  }
  EmitChunk(chunk);
  EmitFlush(Flush::kStore);
  chunk_loop(chunks - 2, [&] {
    EmitChunk(chunk);
    EmitFlush(Flush::kAdd);
  });
  EmitChunk(last);
  EmitFlush(Flush::kFinal);
}

void Da8w4GemmGenerator::EmitChunk(int quads) {
  if (!cfg_.decoded) {
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      EmitStreamPrefetch(this, kW + blk * BlockStride(), 0,
                         quads * QuadStride(), cfg_.prefetch);
    }
  }
  for (int q = 0; q < quads; ++q) EmitQuad(q, q == 0);
  add(kQa, quads * 4);
  add(kW, quads * QuadStride());
}

// AVX-512 on a decoded panel: all blocks' weights of quad q in registers,
// then per row one broadcast feeding 2 * nblk vpdpbusd. Per quad: 2 * nblk
// + mr loads and 2 * mr * nblk vpdpbusd, nothing else.
void Da8w4GemmGenerator::EmitQuadDecodedVnni(int q) {
  const int nw = 2 * cfg_.nblk;
  const Xmm b = vec_.Vec(plan_.bcast);
  for (int i = 0; i < nw; ++i) {
    vmovups(vec_.Vec(plan_.weights + i),
            ptr[kW + (i / 2) * BlockStride() + q * QuadStride() +
                (i % 2) * cfg_.layout.quad_bytes()]);
  }
  for (int r = 0; r < cfg_.mr; ++r) {
    vpbroadcastd(b, ptr[kQa + r * qa_stride_ + q * 4]);
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      for (int half = 0; half < 2; ++half) {
        vpdpbusd(vec_.Vec(AccIndex(r, blk, half)),
                 vec_.Vec(plan_.weights + 2 * blk + half), b);
      }
    }
  }
}

void Da8w4GemmGenerator::EmitQuad(int q, bool first_in_chunk) {
  if (cfg_.decoded && vec_.avx512()) {
    EmitQuadDecodedVnni(q);
    return;
  }
  const Da8w4Layout& lay = cfg_.layout;
  const Xmm wl = vec_.Vec(plan_.wl), wh = vec_.Vec(plan_.wh);
  const Xmm b = vec_.Vec(plan_.b);  // AVX2 broadcast; AVX-512 t
  // One row: broadcast its 4 activation bytes once for all blocks.
  const bool shared_broadcast = cfg_.mr == 1;
  if (shared_broadcast) vpbroadcastd(b, ptr[kQa + q * 4]);
  for (int blk = 0; blk < cfg_.nblk; ++blk) {
    const Xbyak::RegExp w = kW + blk * BlockStride() + q * QuadStride();
    if (cfg_.decoded) {
      vmovups(wl, ptr[w]);
      vmovups(wh, ptr[w + lay.quad_bytes()]);
    } else if (vec_.avx512()) {
      vmovups(wh, ptr[w]);
      const Xmm mask = vec_.Vec(plan_.mask);
      vpandd(wl, wh, mask);
      vpsrlw(wh, wh, 4);
      vpandd(wh, wh, mask);
    } else {
      vmovups(wh, ptr[w]);
      vpand(wl, wh, pool_.Splat32(0x0F0F0F0F));
      vpsrlw(wh, wh, 4);
      vpand(wh, wh, pool_.Splat32(0x0F0F0F0F));
    }
    for (int r = 0; r < cfg_.mr; ++r) {
      const Xbyak::RegExp qa = kQa + r * qa_stride_ + q * 4;
      if (vec_.avx512()) {
        for (int half = 0; half < 2; ++half) {
          const Xmm acc = vec_.Vec(AccIndex(r, blk, half));
          if (shared_broadcast) {
            vpdpbusd(acc, half ? wh : wl, b);
          } else {
            vpdpbusd(acc, half ? wh : wl, ptr_b[qa]);
          }
        }
        continue;
      }
      if (!shared_broadcast) vpbroadcastd(b, ptr[qa]);
      for (int half = 0; half < 2; ++half) {
        const Xmm acc = vec_.Vec(AccIndex(r, blk, half));
        if (first_in_chunk) {
          vpmaddubsw(acc, half ? wh : wl, b);
        } else {
          const Xmm t = vec_.Vec(plan_.t);  // the product
          vpmaddubsw(t, half ? wh : wl, b);
          vpaddw(acc, acc, t);
        }
      }
    }
  }
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

void Da8w4GemmGenerator::EmitFlush(Flush mode) {
  const Xmm wl = vec_.Vec(plan_.wl), wh = vec_.Vec(plan_.wh),
            b = vec_.Vec(plan_.b), t = vec_.Vec(plan_.t);
  const bool group_end = mode == Flush::kFinal || mode == Flush::kOnly;
  for (int r = 0; r < cfg_.mr; ++r) {
    if (group_end) LoadRowSum(r, b);
    // Per group: sa[r, g] (the sa rows are laid out as the sums rows).
    if (group_end && cfg_.act_per_group) {
      vbroadcastss(wh, ptr[rsi + r * sums_stride_]);
    }
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      for (int half = 0; half < 2; ++half) {
        const int i = AccIndex(r, blk, half);
        vpmaddwd(t, vec_.Vec(i), pool_.Splat16(1));
        if (mode != Flush::kStore && mode != Flush::kOnly) {
          vpaddd(t, t, ptr[rsp + I32Tile(i)]);
        }
        if (group_end) {
          EmitGroupEndOne(r, blk, half, t, b, wl, wh);
        } else {
          vmovaps(ptr[rsp + I32Tile(i)], t);
        }
      }
    }
  }
}

void Da8w4GemmGenerator::EmitGroupEndVnni() {
  const Xmm row_sum = vec_.Vec(plan_.row_sum), tmp = vec_.Vec(plan_.tmp);
  for (int r = 0; r < cfg_.mr; ++r) {
    LoadRowSum(r, row_sum);
    // Per group: sa[r, g], an embedded broadcast (rows as the sums rows).
    const Xbyak::Address row_sa = ptr_b[rsi + r * sums_stride_];
    for (int blk = 0; blk < cfg_.nblk; ++blk) {
      for (int half = 0; half < 2; ++half) {
        const Xmm acc = vec_.Vec(AccIndex(r, blk, half));
        EmitGroupEndOne(r, blk, half, acc, row_sum, tmp, row_sa);
        vpxord(acc, acc, acc);
      }
    }
  }
}

// y = epilogue(tile * sa (+ bias)), or per group epilogue(tile (+ bias)),
// stored as f32 or bf16; only real
// output columns. With silu_mul a block's two halves (gate, up) make one
// output vector.
void Da8w4GemmGenerator::EmitEpilogue() {
  const Da8w4Layout& lay = cfg_.layout;
  const EpilogueEmitter ep(this, vec_, &pool_, cfg_.epilogue);
  const Xmm sa = vec_.Vec(0), v = vec_.Vec(1), up = vec_.Vec(2);
  const EpilogueEmitter::Temps t = {vec_.Vec(3), vec_.Vec(4), vec_.Vec(5),
                                    vec_.Vec(6)};
  const Xbyak::Reg64 operands[2] = {kEpOperand0, kEpOperand1};
  mov(rax, ptr[rdi + offsetof(Da8w4GemmArgs, sa)]);
  mov(rcx, ptr[rsp + Local(4)]);
  mov(rdx, ptr[rdi + offsetof(Da8w4GemmArgs, ldy_bytes)]);
  mov(rsi, ptr[rsp + Local(3)]);
  for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
    mov(operands[i], ptr[rsp + Local(5 + i)]);
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
    if (cfg_.bias) vaddps(dst, dst, ptr[rsi + col * 4]);
  };
  auto store = [&](int col, int count) {
    if (cfg_.out_dtype == DType::kF32) {
      vec_.StoreF32(rcx + col * 4, v, count, t[0], ebx);
    } else {
      vec_.StoreBf16(rcx + col * 2, v, count, t[0], t[1], ebx, &pool_);
    }
  };
  for (int r = 0; r < cfg_.mr; ++r) {
    if (!cfg_.act_per_group) vbroadcastss(sa, ptr[rax + 4 * r]);
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
      add(rcx, rdx);
      for (int i = 0; i < cfg_.epilogue.num_binary; ++i) {
        add(operands[i],
            ptr[rdi + offsetof(Da8w4GemmArgs, ep_ld_bytes) + 8 * i]);
      }
    }
  }
}

}  // namespace w4jit::internal
