#include "jit/w4a16_amx_decode_generator.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/isa_traits.h"
#include "jit/w4a16_amx_plan.h"
#include "jit/w4a16_layout.h"

namespace w4jit::internal {
namespace {

using Xbyak::Zmm;
using Xbyak::util::ptr;

// GPRs. rdi: args.
constexpr Xbyak::Reg64 kW(Xbyak::Operand::R8);       // packed pair cursor
constexpr Xbyak::Reg64 kMeta(Xbyak::Operand::R9);    // the group's meta
constexpr Xbyak::Reg64 kPanel(Xbyak::Operand::R10);  // panel row cursor
constexpr Xbyak::Reg64 kGroupsLeft(Xbyak::Operand::R11);
constexpr Xbyak::Reg64 kPairsLeft(Xbyak::Operand::RCX);
// Groups left in the tile group (zentorch numerics' segments only).
constexpr Xbyak::Reg64 kTileGroupLeft(Xbyak::Operand::RAX);
// Vector registers: the per-vector index offsets from 0 (u4: one per
// column vector, 15 - z; s4: one for all), the temporaries from 16.
constexpr int kTable = 31;    // bf16 value of each index
constexpr int kNibbles = 30;  // 0x000F000F: low word lo, high word hi
constexpr int kFifteen = 29;  // u4: 15 in each dword
constexpr int kTemp0 = 16;

// The 32 words of the vpermw table, two per dword.
std::array<uint32_t, 16> Table(bool u4) {
  std::array<uint32_t, 16> t;
  auto value = [u4](int i) -> int {
    if (u4) return i - 15;      // index u - z + 15
    if (i < 16) return i - 8;   // low word: u, q = u - 8
    return ((i - 16) ^ 8) - 8;  // high word: q in two's complement
  };
  for (int j = 0; j < 16; ++j) {
    t[j] =
        F32ToBf16(static_cast<float>(value(2 * j))) |
        static_cast<uint32_t>(F32ToBf16(static_cast<float>(value(2 * j + 1))))
            << 16;
  }
  return t;
}

}  // namespace

absl::Status CheckW4a16AmxDecodeConfig(const W4a16AmxDecodeConfig& c) {
  if (c.nr <= 0 || c.nr % 16 != 0 || c.nr > 256 || c.group_pairs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad W4A16 AMX decode: NB ", c.nr, " (a multiple of 16 up to 256), ",
        c.group_pairs, " pairs per group"));
  }
  if (c.nr % 32 != 0 || c.tile_group_pairs < c.group_pairs ||
      c.tile_group_pairs % c.group_pairs != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad W4A16 AMX decode: NB ", c.nr, " is not whole column pairs, or ",
        c.tile_group_pairs, " pairs per tile group are not whole groups of ",
        c.group_pairs));
  }
  if (c.scaled && c.nr > 128) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the scaled AMX decode holds up to 8 vectors of meta, not NB ", c.nr));
  }
  if (c.u4 && c.float_zero) {
    return absl::InvalidArgumentError("integer and float zero points at once");
  }
  return CheckPrefetchDistance(c.prefetch);
}

W4a16AmxDecodeConfig W4a16AmxDecodeConfig::Canonical() const {
  W4a16AmxDecodeConfig c = *this;
  if (!c.u4 && !c.scaled) c.per_channel = false;
  if (!c.scaled) {
    c.float_zero = false;
    c.meta_dtype = DType::kF32;
  }
  return c;
}

KernelName W4a16AmxDecodeConfig::NameParts() const {
  KernelName key;
  key.family = KernelFamily::kW4a16AmxDecode;
  key.isa = IsaTier::kAmx;
  key.weight_type = u4 ? WeightType::kU4 : WeightType::kS4;
  key.group_size = 2 * group_pairs;
  key.k = 2 * tile_group_pairs;
  key.per_channel = per_channel;
  key.n = nr;
  key.nr = nr;
  key.round_weights_bf16 = scaled;
  key.float_zero = scaled && float_zero;
  key.meta_dtype = scaled ? meta_dtype : DType::kF32;
  key.prefetch = prefetch;
  return key;
}

W4a16AmxDecodeGenerator::W4a16AmxDecodeGenerator(
    const W4a16AmxDecodeConfig& config)
    : Generator(config.name()), config_(config), nv_(config.nr / 16) {}

void W4a16AmxDecodeGenerator::Generate() {
  const Xbyak::Reg64 args(kArg1);
  Preamble();
  mov(kW, ptr[args + offsetof(W4a16AmxDecodeArgs, w)]);
  mov(kMeta, ptr[args + offsetof(W4a16AmxDecodeArgs, meta)]);
  mov(kPanel, ptr[args + offsetof(W4a16AmxDecodeArgs, panel)]);
  mov(kGroupsLeft, ptr[args + offsetof(W4a16AmxDecodeArgs, groups)]);
  const int64_t groups_per_tile_group =
      config_.tile_group_pairs / config_.group_pairs;
  if (groups_per_tile_group > 1) mov(kTileGroupLeft, groups_per_tile_group);
  Xbyak::Label group_loop;
  L(group_loop);
  if (config_.scaled) {
    EmitScaledPairs();
  } else {
    EmitIntegerPairs();
  }
  if (!config_.per_channel) {
    // u4 meta: NB f32 scales, NB z, NB 16 z; float zero points: scales,
    // zf, 16 zf; else the scales (jit/w4a16_layout.h).
    const int ms = static_cast<int>(DTypeSize(config_.meta_dtype));
    const bool zeros = config_.u4 || config_.float_zero;
    if (config_.u4 || config_.scaled) {
      add(kMeta, config_.nr * ms * MetaVectorsPerGroup(false, zeros));
    }
  }
  // The pair loops leave kPanel tile_group_pairs rows of 128 bytes on at a
  // tile group's end, where it steps over the other column pairs' rows.
  const int64_t next_tile_group =
      config_.tile_group_pairs *
      (int64_t{config_.nr} * 4 - kW4a16AmxPanelRowBytes);
  if (groups_per_tile_group > 1) {
    Xbyak::Label within;
    dec(kTileGroupLeft);
    jnz(within, T_NEAR);
    add(kPanel, static_cast<uint32_t>(next_tile_group));
    mov(kTileGroupLeft, groups_per_tile_group);
    L(within);
  } else {
    add(kPanel, static_cast<uint32_t>(next_tile_group));
  }
  dec(kGroupsLeft);
  jnz(group_loop, T_NEAR);
  Postamble();
  pool_.Emit(this);
}

int64_t W4a16AmxDecodeGenerator::PanelOffset(int c) const {
  return W4a16AmxPanelOffset(config_.tile_group_pairs, c / 2, c % 2);
}

// One group's pairs as the weights' integers through the vpermw table.
void W4a16AmxDecodeGenerator::EmitIntegerPairs() {
  const int nb = config_.nr;
  vmovups(Zmm(kTable), pool_.Table(Table(config_.u4)));
  vmovups(Zmm(kNibbles), pool_.Splat32(0x000F000F));
  if (config_.u4) {
    // 15 - z in both words of each column's dword.
    vmovups(Zmm(kFifteen), pool_.Splat32(15));
    for (int c = 0; c < nv_; ++c) {
      const Zmm o(c), t(kTemp0);
      vpsubd(o, Zmm(kFifteen), ptr[kMeta + nb * 4 + c * 64]);
      vpslld(t, o, 16);
      vpord(o, o, t);
    }
  } else {
    vmovups(Zmm(0), pool_.Splat32(0x00100000));
  }
  auto offset = [&](int c) { return Zmm(config_.u4 ? c : 0); };
  Xbyak::Label pair_loop;
  mov(kPairsLeft, config_.group_pairs);
  L(pair_loop);
  EmitStreamPrefetch(this, kW, 0, nb, config_.prefetch);
  for (int c = 0; c < nv_; ++c) {
    const Zmm d(kTemp0 + 2 * (c % 6)), t(kTemp0 + 2 * (c % 6) + 1);
    vpmovzxbd(d, ptr[kW + c * 16]);
    vpslld(t, d, 12);
    // (d | t) & 0x000F000F: the low nibble in the low word, the high
    // nibble in the high word.
    vpternlogd(d, t, Zmm(kNibbles), 0xA8);
    vpaddd(d, d, offset(c));
    vpermw(d, d, Zmm(kTable));
    vmovdqu32(ptr[kPanel + PanelOffset(c)], d);
  }
  add(kW, nb);
  add(kPanel, kW4a16AmxPanelRowBytes);
  dec(kPairsLeft);
  jnz(pair_loop, T_NEAR);
}

// One group's pairs as dequantized weights rounded to bf16, in the f32
// dequantizer's operations: f32(u - z) * s (+ zf), then to bf16.
void W4a16AmxDecodeGenerator::EmitScaledPairs() {
  const int nb = config_.nr;
  const int ms = static_cast<int>(DTypeSize(config_.meta_dtype));
  const VecEmitter vec(this, IsaTier::kAvx512Bf16);
  // Per vector c: its scales in zmm c, its z (u4) or zf in zmm 8 + c.
  auto scale = [](int c) { return Zmm(c); };
  auto zero = [](int c) { return Zmm(8 + c); };
  const Zmm mask15(28), eight(29);
  for (int c = 0; c < nv_; ++c) {
    EmitLoadWidenedF32(this, config_.meta_dtype, ptr[kMeta + c * 16 * ms],
                       scale(c));
    if (config_.u4) {
      vmovdqu32(zero(c), ptr[kMeta + nb * 4 + c * 64]);
    } else if (config_.float_zero) {
      EmitLoadWidenedF32(this, config_.meta_dtype,
                         ptr[kMeta + (nb + c * 16) * ms], zero(c));
    }
  }
  vmovups(mask15, pool_.Splat32(15));
  vmovups(eight, pool_.Splat32(8));
  Xbyak::Label pair_loop;
  mov(kPairsLeft, config_.group_pairs);
  L(pair_loop);
  EmitStreamPrefetch(this, kW, 0, nb, config_.prefetch);
  for (int c = 0; c < nv_; ++c) {
    const Zmm lo(kTemp0 + 4 * (c % 3)), hi(kTemp0 + 4 * (c % 3) + 1),
        t0(kTemp0 + 4 * (c % 3) + 2), t1(kTemp0 + 4 * (c % 3) + 3);
    vpmovzxbd(hi, ptr[kW + c * 16]);
    vpandd(lo, hi, mask15);
    vpsrld(hi, hi, 4);
    if (config_.u4) {
      vpsubd(lo, lo, zero(c));
      vpsubd(hi, hi, zero(c));
    } else {
      // s4 packing: the low nibble is u, the high one q in two's
      // complement ((h ^ 8) - 8).
      vpsubd(lo, lo, eight);
      vpxord(hi, hi, eight);
      vpsubd(hi, hi, eight);
    }
    vcvtdq2ps(lo, lo);
    vcvtdq2ps(hi, hi);
    vmulps(lo, lo, scale(c));
    vmulps(hi, hi, scale(c));
    if (config_.float_zero) {
      vaddps(lo, lo, zero(c));
      vaddps(hi, hi, zero(c));
    }
    EmitRoundToBf16InPlace(this, vec, lo, t0, t1, &pool_);
    EmitRoundToBf16InPlace(this, vec, hi, t0, t1, &pool_);
    // The bf16 bits of k 2p in the low word, of 2p + 1 in the high one.
    vpsrld(lo, lo, 16);
    vpord(lo, lo, hi);
    vmovdqu32(ptr[kPanel + PanelOffset(c)], lo);
  }
  add(kW, nb);
  add(kPanel, kW4a16AmxPanelRowBytes);
  dec(kPairsLeft);
  jnz(pair_loop, T_NEAR);
}

}  // namespace w4jit::internal
