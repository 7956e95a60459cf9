#include "jit/w4a16_panel_generator.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/str_format.h"
#include "dispatch/isa_traits.h"
#include "jit/epilogue_emit.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;
using Xbyak::util::ptr;

// The register roles (jit/w4a16_panel_plan.h).
using w4a16_panel_gpr::kA;
using w4a16_panel_gpr::kAccRows;
using w4a16_panel_gpr::kArgs;
using w4a16_panel_gpr::kARowBytes;
using w4a16_panel_gpr::kARows;
using w4a16_panel_gpr::kBias;
using w4a16_panel_gpr::kEpOperand0;
using w4a16_panel_gpr::kEpOperand1;
using w4a16_panel_gpr::kFlags;
using w4a16_panel_gpr::kPairsLeft;
using w4a16_panel_gpr::kPanel;
using w4a16_panel_gpr::kRowsLeft;
using w4a16_panel_gpr::kRowY;
using w4a16_panel_gpr::kScratch;
using w4a16_panel_gpr::kStoreTmp32;
using w4a16_panel_gpr::kStoreY;

}  // namespace

absl::Status CheckW4a16PanelConfig(const W4a16PanelConfig& c) {
  if (TraitsOf(c.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError("W4A16 kernels need at least AVX2");
  }
  if (c.out_dtype != DType::kF32 && c.out_dtype != DType::kBF16) {
    return absl::InvalidArgumentError("output must be f32 or bf16");
  }
  const int lanes = TraitsOf(c.isa).lanes32();
  if (c.nr <= 0 || c.nr % lanes != 0 || c.stride < c.nr || c.n <= 0 ||
      c.n > c.nr || c.mr <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bad panel tile: nr %d, stride %d, columns %d, mr %d",
                        c.nr, c.stride, c.n, c.mr));
  }
  const int nv = c.nr / lanes;
  if (c.epilogue.silu_mul &&
      (nv % 2 != 0 || c.out_n <= 0 || 2 * c.out_n > c.n)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "silu_mul panel tile: %d vectors (must be even), %d output columns "
        "of %d",
        nv, c.out_n, c.n));
  }
  // The tallest tile; the row tail's are shorter.
  return MakeW4a16PanelPlan(c.isa, c.mr, nv).status();
}

W4a16PanelConfig W4a16PanelConfig::Canonical() const {
  W4a16PanelConfig c = *this;
  if (!c.epilogue.silu_mul) c.out_n = 0;
  return c;
}

KernelName W4a16PanelConfig::NameParts() const {
  const W4a16PanelConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kW4a16Panel;
  key.isa = c.isa;
  key.flavor = Flavor::kF32Fma;
  key.act_dtype = DType::kF32;
  key.out_dtype = c.out_dtype;
  key.float_zero = c.float_zero;
  key.bias = c.bias;
  key.mr = c.mr;
  key.nr = c.nr;
  key.k = c.stride;
  key.n = c.n;
  SetNameEpilogue(&key, c.epilogue);
  key.out_n = c.out_n;
  return key;
}

W4a16PanelGenerator::W4a16PanelGenerator(const W4a16PanelConfig& config)
    : Generator(config.name()),
      config_(config),
      epilogue_(config.epilogue),
      vec_(this, config.isa),
      lanes_(vec_.lanes32()),
      nv_(config.nr / vec_.lanes32()),
      stride_(config.stride) {}

void W4a16PanelGenerator::Generate() {
  Preamble();
  mov(kFlags, ptr[kArgs + offsetof(W4a16PanelArgs, flags)]);
  mov(kARowBytes, ptr[kArgs + offsetof(W4a16PanelArgs, a_row_bytes)]);
  mov(kAccRows, ptr[kArgs + offsetof(W4a16PanelArgs, acc)]);
  mov(kARows, ptr[kArgs + offsetof(W4a16PanelArgs, a)]);
  mov(kRowsLeft, ptr[kArgs + offsetof(W4a16PanelArgs, m)]);
  mov(kRowY, ptr[kArgs + offsetof(W4a16PanelArgs, y)]);

  EmitRowTiles(
      this, kRowsLeft, config_.mr, [&](int mr) { EmitTile(mr); },
      [&](int mr) {
        imul(kScratch, kARowBytes, mr);
        add(kARows, kScratch);
        add(kAccRows, static_cast<uint32_t>(mr * stride_ * 4));
        mov(kScratch, ptr[kArgs + offsetof(W4a16PanelArgs, ldy_bytes)]);
        imul(kScratch, kScratch, mr);
        add(kRowY, kScratch);
      });
  Postamble();
  pool_.Emit(this);
}

void W4a16PanelGenerator::EmitTile(int mr) {
  const bool avx512 = vec_.avx512();
  // A row tail's tile (mr <= config_.mr) fits where the config's does.
  const W4a16PanelPlan plan = *MakeW4a16PanelPlan(config_.isa, mr, nv_);
  auto acc = [&](int r, int v) { return vec_.Vec(plan.Acc(r, v)); };
  auto scratch = [&](int r, int v) {
    return ptr[kAccRows + (r * stride_ + v * lanes_) * 4];
  };
  Xbyak::Label zero_init, init_done, final_store, stored, kloop;
  test(kFlags, W4a16PanelArgs::kLoadAcc);
  jz(zero_init, T_NEAR);
  for (int r = 0; r < mr; ++r) {
    for (int v = 0; v < nv_; ++v) vmovups(acc(r, v), scratch(r, v));
  }
  jmp(init_done, T_NEAR);
  L(zero_init);
  for (int r = 0; r < mr; ++r) {
    for (int v = 0; v < nv_; ++v) {
      if (avx512) {
        vpxord(acc(r, v), acc(r, v), acc(r, v));
      } else {
        vxorps(acc(r, v), acc(r, v), acc(r, v));
      }
    }
  }
  L(init_done);

  mov(kA, ptr[kArgs + offsetof(W4a16PanelArgs, k0)]);
  imul(kA, kA, mr * 4);
  add(kA, kARows);
  mov(kPanel, ptr[kArgs + offsetof(W4a16PanelArgs, panel)]);
  mov(kPairsLeft, ptr[kArgs + offsetof(W4a16PanelArgs, kc)]);
  shr(kPairsLeft, 1);
  L(kloop);
  EmitK(plan, 0);
  EmitK(plan, 1);
  add(kPanel, static_cast<uint32_t>(2 * stride_ * 4));
  add(kA, 2 * mr * 4);
  dec(kPairsLeft);
  jnz(kloop, T_NEAR);

  test(kFlags, W4a16PanelArgs::kFinal);
  jnz(final_store, T_NEAR);
  for (int r = 0; r < mr; ++r) {
    for (int v = 0; v < nv_; ++v) vmovups(scratch(r, v), acc(r, v));
  }
  jmp(stored, T_NEAR);

  L(final_store);
  if (!epilogue_.empty()) {
    EmitEpilogueStore(plan);
    L(stored);
    return;
  }
  const Xmm t0 = vec_.Vec(plan.store0);
  const Xmm t1 = vec_.Vec(plan.store1);
  mov(kStoreY, kRowY);
  if (config_.bias) mov(kBias, ptr[kArgs + offsetof(W4a16PanelArgs, bias)]);
  for (int r = 0; r < mr; ++r) {
    for (int v = 0; v < nv_; ++v) {
      const int count = static_cast<int>(
          std::clamp<int64_t>(config_.n - int64_t{v} * lanes_, 0, lanes_));
      if (count == 0) continue;
      const Xmm val = acc(r, v);
      if (config_.bias) vaddps(val, val, ptr[kBias + v * lanes_ * 4]);
      if (config_.out_dtype == DType::kF32) {
        vec_.StoreF32(kStoreY + v * lanes_ * 4, val, count, t0, kStoreTmp32);
      } else {
        vec_.StoreBf16(kStoreY + v * lanes_ * 2, val, count, t0, t1,
                       kStoreTmp32, &pool_);
      }
    }
    if (r + 1 < mr) {
      add(kStoreY, ptr[kArgs + offsetof(W4a16PanelArgs, ldy_bytes)]);
    }
  }
  L(stored);
}

void W4a16PanelGenerator::EmitEpilogueStore(const W4a16PanelPlan& plan) {
  const int mr = plan.mr;
  auto scratch = [&](int r, int v) {
    return ptr[kAccRows + (r * stride_ + v * lanes_) * 4];
  };
  for (int r = 0; r < mr; ++r) {
    for (int v = 0; v < nv_; ++v) {
      vmovups(scratch(r, v), vec_.Vec(plan.Acc(r, v)));
    }
  }
  const EpilogueEmitter ep(this, vec_, &pool_, epilogue_);
  // Operand rows of this row tile: ep + (m - rows left) * ld.
  const Xbyak::Reg64 operands[2] = {kEpOperand0, kEpOperand1};
  for (int i = 0; i < epilogue_.num_binary; ++i) {
    const Xbyak::Reg64& o = operands[i];
    mov(o, ptr[kArgs + offsetof(W4a16PanelArgs, m)]);
    sub(o, kRowsLeft);
    imul(o, ptr[kArgs + offsetof(W4a16PanelArgs, ep_ld_bytes) + 8 * i]);
    add(o, ptr[kArgs + offsetof(W4a16PanelArgs, ep) + 8 * i]);
  }
  mov(kStoreY, kRowY);
  if (config_.bias) mov(kBias, ptr[kArgs + offsetof(W4a16PanelArgs, bias)]);
  const bool pair = epilogue_.silu_mul;
  EpilogueEmitter::TileStores s;
  s.rows = mr;
  s.out_vectors = pair ? nv_ / 2 : nv_;
  s.out_cols = pair ? config_.out_n : config_.n;
  s.value = [&](const Xmm& dst, int r, int v) {
    vmovups(dst, scratch(r, v));
    if (config_.bias) vaddps(dst, dst, ptr[kBias + v * lanes_ * 4]);
  };
  s.y = kStoreY;
  s.ldy_at = kArgs + offsetof(W4a16PanelArgs, ldy_bytes);
  s.ep_ld_at = kArgs + offsetof(W4a16PanelArgs, ep_ld_bytes);
  s.operands = operands;
  s.out_dtype = config_.out_dtype;
  s.gpr_tmp = kStoreTmp32;
  ep.EmitTileStores(s);
}

void W4a16PanelGenerator::EmitK(const W4a16PanelPlan& plan, int k) {
  const int mr = plan.mr;
  const Xmm bcast = vec_.Vec(plan.bcast);
  for (int v = 0; v < nv_; ++v) {
    vmovups(vec_.Vec(plan.panel + v),
            ptr[kPanel + (k * stride_ + v * lanes_) * 4]);
  }
  for (int r = 0; r < mr; ++r) {
    vbroadcastss(bcast, ptr[kA + (k * mr + r) * 4]);
    for (int v = 0; v < nv_; ++v) {
      vfmadd231ps(vec_.Vec(plan.Acc(r, v)), vec_.Vec(plan.panel + v), bcast);
    }
  }
}

}  // namespace w4jit::internal
