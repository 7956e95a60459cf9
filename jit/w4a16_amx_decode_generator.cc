#include "jit/w4a16_amx_decode_generator.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/isa_traits.h"

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
  return absl::OkStatus();
}

W4a16AmxDecodeConfig W4a16AmxDecodeConfig::Canonical() const {
  W4a16AmxDecodeConfig c = *this;
  if (!c.u4) c.per_channel = false;
  return c;
}

std::string W4a16AmxDecodeConfig::name() const {
  KernelName key;
  key.family = KernelFamily::kW4a16AmxDecode;
  key.isa = IsaTier::kAmx;
  key.weight_type = u4 ? WeightType::kU4 : WeightType::kS4;
  key.group_size = 2 * group_pairs;
  key.per_channel = per_channel;
  key.n = nr;
  key.nr = nr;
  return key.str();
}

W4a16AmxDecodeGenerator::W4a16AmxDecodeGenerator(
    const W4a16AmxDecodeConfig& config)
    : Generator(config.name()), config_(config), nv_(config.nr / 16) {}

void W4a16AmxDecodeGenerator::Generate() {
  const Xbyak::Reg64 args(kArg1);
  const int nb = config_.nr;
  Preamble();
  mov(kW, ptr[args + offsetof(W4a16AmxDecodeArgs, w)]);
  mov(kMeta, ptr[args + offsetof(W4a16AmxDecodeArgs, meta)]);
  mov(kPanel, ptr[args + offsetof(W4a16AmxDecodeArgs, panel)]);
  mov(kGroupsLeft, ptr[args + offsetof(W4a16AmxDecodeArgs, groups)]);
  vmovups(Zmm(kTable), pool_.Table(Table(config_.u4)));
  vmovups(Zmm(kNibbles), pool_.Splat32(0x000F000F));
  if (config_.u4) {
    vmovups(Zmm(kFifteen), pool_.Splat32(15));
  } else {
    vmovups(Zmm(0), pool_.Splat32(0x00100000));
  }
  auto offset = [&](int c) { return Zmm(config_.u4 ? c : 0); };

  Xbyak::Label group_loop, pair_loop;
  L(group_loop);
  if (config_.u4) {
    // 15 - z in both words of each column's dword.
    for (int c = 0; c < nv_; ++c) {
      const Zmm o = offset(c), t(kTemp0);
      vpsubd(o, Zmm(kFifteen), ptr[kMeta + nb * 4 + c * 64]);
      vpslld(t, o, 16);
      vpord(o, o, t);
    }
  }
  mov(kPairsLeft, config_.group_pairs);
  L(pair_loop);
  for (int c = 0; c < nv_; ++c) {
    const Zmm d(kTemp0 + 2 * (c % 7)), t(kTemp0 + 2 * (c % 7) + 1);
    vpmovzxbd(d, ptr[kW + c * 16]);
    vpslld(t, d, 12);
    // (d | t) & 0x000F000F: the low nibble in the low word, the high
    // nibble in the high word.
    vpternlogd(d, t, Zmm(kNibbles), 0xA8);
    vpaddd(d, d, offset(c));
    vpermw(d, d, Zmm(kTable));
    vmovdqu32(ptr[kPanel + c * 64], d);
  }
  add(kW, nb);
  add(kPanel, nb * 4);
  dec(kPairsLeft);
  jnz(pair_loop, T_NEAR);
  // u4 meta: NB f32 scales, NB z, NB 16 z (jit/w4a16_layout.h).
  if (config_.u4 && !config_.per_channel) add(kMeta, 3 * nb * 4);
  dec(kGroupsLeft);
  jnz(group_loop, T_NEAR);
  Postamble();
  pool_.Emit(this);
}

}  // namespace w4jit::internal
