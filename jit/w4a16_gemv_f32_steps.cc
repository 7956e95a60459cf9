// The f32-FMA flavour's steps of the W4A16 int4 kernel (AVX2 and AVX-512):
// the tile's constants, the group start from the zero point's share of the
// packed rows' slots, and the steps (k pairs) that decode each vector's low
// nibbles and whole bytes (jit/w4a16_decode.h) and multiply them with x in
// f32 FMAs, by one of the plan's three AVX2 register strategies or with
// embedded broadcasts. The driver (jit/w4a16_gemv_generator.cc) calls these
// and never sees a decode.
#include <algorithm>
#include <optional>

#include "jit/w4a16_decode.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_gemv_plan.h"
#include "jit/w4a16_layout.h"

namespace w4jit::internal {
namespace {

using w4a16_gemv_gpr::kMeta;
using w4a16_gemv_gpr::kW;
using w4a16_gemv_gpr::kX;
using Xbyak::Xmm;
using Xbyak::util::ptr;

// The f32 decode's mask of the low nibble (jit/w4a16_decode.h).
constexpr uint32_t kMaskLo = 0x0F;

}  // namespace

F32Int4RowSlots W4a16GemvGenerator::F32Slots() const {
  return F32Int4Slots(config_.weight_type == WeightType::kU4,
                      config_.float_zero);
}

void W4a16GemvGenerator::EmitF32TileConstants(const W4a16GemvPlan& p) {
  if (p.mask_lo >= 0) {
    vmovups(vec_.Vec(p.mask_lo), pool_.Splat32(kMaskLo));
  }
}

void W4a16GemvGenerator::EmitF32GroupStart(const W4a16GemvPlan& p, int mr) {
  const bool u4 = config_.weight_type == WeightType::kU4;
  // s4 loads the k-even chains (Acc(r, v, 0), every split-th) below.
  ZeroAccumulators(p, mr, /*skip_k_even=*/!u4);
  // The slots follow the group's packed x (rdx points at its start).
  const int64_t slots = config_.group_size * mr * 4;
  for (int r = 0; r < mr; ++r) {
    if (!u4) {
      // s4: -8 * sum of the group's even x, into the k-even chain.
      for (int v = 0; v < p.nv; ++v) {
        vbroadcastss(vec_.Vec(p.Acc(r, v, 0)), ptr[kX + slots + r * 4]);
      }
      continue;
    }
    // u4: -z * sum of the group's x, one rounding: 0 - sum * z. The meta
    // holds z as int32 (w4a16_layout.h).
    const Xmm sum = vec_.Vec(p.t1);
    const Xmm z = vec_.Vec(p.t0);
    vbroadcastss(sum, ptr[kX + slots + SumSlot() * mr * 4 + r * 4]);
    for (int v = 0; v < p.nv; ++v) {
      vcvtdq2ps(z, ptr[kMeta + (nb_ + (p.v0 + v) * lanes_) * 4]);
      vfnmadd231ps(vec_.Vec(p.Acc(r, v, 0)), sum, z);
    }
  }
}

void W4a16GemvGenerator::EmitF32Steps(const W4a16GemvPlan& p, int steps,
                                      int mr) {
  const Xmm t0 = vec_.Vec(p.t0);
  const Xmm t1 = vec_.Vec(p.t1);
  // The decode's mask: a register where the plan found room, else memory.
  std::optional<Xmm> mask_reg;
  std::optional<Xbyak::Address> mask_mem;
  const Xbyak::Operand* mask_lo = nullptr;
  if (p.mask_lo >= 0) {
    mask_reg = vec_.Vec(p.mask_lo);
    mask_lo = &*mask_reg;
  } else {
    mask_mem = pool_.Splat32(kMaskLo);
    mask_lo = &*mask_mem;
  }
  for (int s = 0; s < steps; ++s) {
    EmitStepPrefetch(p, s);
    // x offsets of this step's two k for row r.
    auto x_even = [&](int r) { return kX + ((2 * s) * mr + r) * 4; };
    auto x_odd = [&](int r) { return kX + ((2 * s + 1) * mr + r) * 4; };
    if (p.hold_x) {
      for (int r = 0; r < mr; ++r) {
        vbroadcastss(vec_.Vec(p.x0 + 2 * r), ptr[x_even(r)]);
        vbroadcastss(vec_.Vec(p.x0 + 2 * r + 1), ptr[x_odd(r)]);
      }
    }
    if (p.dec >= 0) {
      EmitDecodedStep(p, s, mr, *mask_lo);
      continue;
    }
    for (int v = 0; v < p.nv; ++v) {
      const int c = p.v0 + v;  // the vector's place in the block
      EmitDecodeVector(s, c, t0, t1, *mask_lo);
      for (int r = 0; r < mr; ++r) {
        const Xmm a0 = vec_.Vec(p.Acc(r, v, 0));
        const Xmm a1 = vec_.Vec(p.Acc(r, v, p.split - 1));
        if (p.hold_x) {
          vfmadd231ps(a0, t0, vec_.Vec(p.x0 + 2 * r));
          vfmadd231ps(a1, t1, vec_.Vec(p.x0 + 2 * r + 1));
        } else {
          const Xmm tmp = vec_.Vec(p.bcast >= 0 ? p.bcast : 0);
          vec_.FmaBroadcast(a0, t0, x_even(r), tmp);
          vec_.FmaBroadcast(a1, t1, x_odd(r), tmp);
        }
      }
    }
  }
}

void W4a16GemvGenerator::EmitDecodeVector(int s, int c, const Xmm& lo,
                                          const Xmm& byte,
                                          const Xbyak::Operand& mask_lo) {
  EmitDecodeBytePairF32(this, vec_, config_.weight_type != WeightType::kU4,
                        ptr[kW + s * nb_ + c * lanes_], lo, byte, mask_lo);
}

void W4a16GemvGenerator::EmitDecodedStep(const W4a16GemvPlan& p, int s, int mr,
                                         const Xbyak::Operand& mask_lo) {
  for (int v = 0; v < p.nv; ++v) {
    EmitDecodeVector(s, p.v0 + v, vec_.Vec(p.dec + 2 * v),
                     vec_.Vec(p.dec + 2 * v + 1), mask_lo);
  }
  const Xmm b = vec_.Vec(p.bcast);
  for (int r = 0; r < mr; ++r) {
    for (int parity = 0; parity < 2; ++parity) {
      vbroadcastss(b, ptr[kX + ((2 * s + parity) * mr + r) * 4]);
      for (int v = 0; v < p.nv; ++v) {
        vfmadd231ps(vec_.Vec(p.Acc(r, v, parity == 0 ? 0 : p.split - 1)),
                    vec_.Vec(p.dec + 2 * v + parity), b);
      }
    }
  }
}

}  // namespace w4jit::internal
