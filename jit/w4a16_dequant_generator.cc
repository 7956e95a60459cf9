#include "jit/w4a16_dequant_generator.h"

#include <algorithm>
#include <cstddef>

#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "dispatch/isa_traits.h"
#include "jit/w4a16_decode.h"
#include "jit/w4a16_layout.h"
#include "jit/w4a16_panel_plan.h"

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;
using Xbyak::util::ptr;

// The register roles (jit/w4a16_panel_plan.h).
using w4a16_dequant_gpr::kArgs;
using w4a16_dequant_gpr::kItersLeft;
using w4a16_dequant_gpr::kMeta;
using w4a16_dequant_gpr::kPanel;
using w4a16_dequant_gpr::kSegmentsLeft;
using w4a16_dequant_gpr::kW;

// Pairs of k per unrolled loop iteration.
constexpr int kUnroll = 4;

}  // namespace

absl::Status CheckW4a16DequantConfig(const W4a16DequantConfig& c) {
  if (TraitsOf(c.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError("W4A16 kernels need at least AVX2");
  }
  if (c.float_zero && c.weight_type != WeightType::kS4) {
    return absl::InvalidArgumentError(
        "float zero points decode the nibbles as s4 (u - 8): weight_type "
        "must be s4 in the config");
  }
  if (c.meta_dtype != DType::kF32 &&
      (c.float_zero || c.weight_type == WeightType::kU4)) {
    // The zero points are memory operands of the decode (MetaMayBe16Bit).
    return absl::InvalidArgumentError(
        "16-bit meta only without zero points (w4a16_layout.h)");
  }
  const int lanes = TraitsOf(c.isa).lanes32();
  if (c.nr <= 0 || c.nr % lanes != 0 || c.segment <= 0 || c.segment % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "block width %d / segment %d: need a multiple of %d and an even "
        "segment",
        c.nr, c.segment, lanes));
  }
  return MakeW4a16DequantPlan(c.isa, c.nr / lanes, c.round_weights_bf16)
      .status();
}

W4a16DequantConfig W4a16DequantConfig::Canonical() const { return *this; }

KernelName W4a16DequantConfig::NameParts() const {
  const W4a16DequantConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kW4a16Dequant;
  key.isa = c.isa;
  key.flavor = Flavor::kF32Fma;
  key.act_dtype = DType::kF32;
  key.out_dtype = DType::kF32;
  key.weight_type = c.weight_type;
  key.float_zero = c.float_zero;
  key.meta_dtype = c.meta_dtype;
  key.group_size = c.group_size;
  key.per_channel = c.per_channel;
  key.n = c.nr;
  key.nr = c.nr;
  key.k = c.segment;
  key.round_weights_bf16 = c.round_weights_bf16;
  return key;
}

W4a16DequantGenerator::W4a16DequantGenerator(const W4a16DequantConfig& config)
    : Generator(config.name()),
      config_(config),
      vec_(this, config.isa),
      lanes_(vec_.lanes32()),
      nv_(config.nr / vec_.lanes32()),
      nb_(config.nr),
      // Checked (CheckW4a16DequantConfig) before a generator is made.
      plan_(*MakeW4a16DequantPlan(config.isa, nv_, config.round_weights_bf16)) {
}

void W4a16DequantGenerator::Generate() {
  const bool u4 = config_.weight_type == WeightType::kU4;
  const bool fz = config_.float_zero;
  Preamble();
  mov(kW, ptr[kArgs + offsetof(W4a16DequantArgs, w)]);
  mov(kMeta, ptr[kArgs + offsetof(W4a16DequantArgs, meta)]);
  mov(kPanel, ptr[kArgs + offsetof(W4a16DequantArgs, panel)]);
  mov(kSegmentsLeft, ptr[kArgs + offsetof(W4a16DequantArgs, segments)]);
  // Decode constants (jit/w4a16_decode.h): mask_hi, mask_lo, s4 zero.
  vmovups(vec_.Vec(plan_.mask_hi), pool_.Splat32(u4 ? 0xF0u : 0xFFFFFFF0u));
  vmovups(vec_.Vec(plan_.mask_lo), pool_.Splat32(0x0Fu));
  if (!u4) vmovups(vec_.Vec(plan_.zero8), pool_.Splat32(8));

  const int pairs = static_cast<int>(config_.segment / 2);
  const int unroll = std::min(pairs, kUnroll);
  const int iters = pairs / unroll;
  const int rest = pairs % unroll;
  Xbyak::Label segment;
  L(segment);
  const int meta_size = static_cast<int>(DTypeSize(config_.meta_dtype));
  for (int v = 0; v < nv_; ++v) {
    EmitLoadWidenedF32(this, config_.meta_dtype,
                       ptr[kMeta + v * lanes_ * meta_size],
                       vec_.Vec(plan_.Scale(v)));
  }
  auto advance = [&](int n) {
    add(kW, static_cast<uint32_t>(n * nb_));
    add(kPanel, static_cast<uint32_t>(n * 2 * nb_ * 4));
  };
  if (iters > 1) {
    Xbyak::Label loop;
    mov(kItersLeft, iters);
    L(loop);
    EmitPairs(unroll);
    advance(unroll);
    dec(kItersLeft);
    jnz(loop, T_NEAR);
  } else {
    EmitPairs(unroll);
    advance(unroll);
  }
  if (rest > 0) {
    EmitPairs(rest);
    advance(rest);
  }
  add(kMeta, static_cast<uint32_t>(nb_ * meta_size *
                                   MetaVectorsPerGroup(false, u4 || fz)));
  dec(kSegmentsLeft);
  jnz(segment, T_NEAR);
  Postamble();
  pool_.Emit(this);
}

void W4a16DequantGenerator::EmitPairs(int pairs) {
  const bool u4 = config_.weight_type == WeightType::kU4;
  const Xmm mask_hi = vec_.Vec(plan_.mask_hi);
  const Xmm mask_lo = vec_.Vec(plan_.mask_lo);
  const Xmm zero8 = vec_.Vec(plan_.zero8);
  for (int s = 0; s < pairs; ++s) {
    for (int v = 0; v < nv_; ++v) {
      // Alternate two sets of temporaries so that consecutive vectors
      // overlap.
      const Xmm even = vec_.Vec(plan_.Even(v));
      const Xmm odd = vec_.Vec(plan_.Odd(v));
      const Xbyak::Address zeros = ptr[kMeta + (nb_ + v * lanes_) * 4];
      const Xbyak::Address zeros16 = ptr[kMeta + (2 * nb_ + v * lanes_) * 4];
      NibbleDecodeOperands ops;
      ops.mask_hi = &mask_hi;
      ops.mask_lo = &mask_lo;
      ops.zero = u4 ? static_cast<const Xbyak::Operand*>(&zeros) : &zero8;
      ops.zero16 = &zeros16;
      EmitDecodeNibblePairsF32(this, vec_, !u4, ptr[kW + s * nb_ + v * lanes_],
                               even, odd, ops);
      vmulps(even, even, vec_.Vec(plan_.Scale(v)));
      vmulps(odd, odd, vec_.Vec(plan_.Scale(v)));
      if (config_.float_zero) {
        // w = (u - 8) * s + zf; the odd k hold 16 * w (x is divided by 16).
        vaddps(even, even, zeros);
        vaddps(odd, odd, zeros16);
      }
      if (config_.round_weights_bf16) {
        // Numerics::kZentorch: the weight rounded to bf16 (the odd k hold
        // 16 * w: the same rounding, scaled by a power of two).
        const Xmm round0 = vec_.Vec(plan_.round0);
        const Xmm round1 = vec_.Vec(plan_.round1);
        EmitRoundToBf16InPlace(this, vec_, even, round0, round1, &pool_);
        EmitRoundToBf16InPlace(this, vec_, odd, round0, round1, &pool_);
      }
      vmovups(ptr[kPanel + ((2 * s) * nb_ + v * lanes_) * 4], even);
      vmovups(ptr[kPanel + ((2 * s + 1) * nb_ + v * lanes_) * 4], odd);
    }
  }
}

}  // namespace w4jit::internal
