// What each ISA tier brings, in one table: its W4JIT_ISA name, the suffix
// of kernel names, the vector registers the JIT code uses and which dot
// products it has (after oneDNN's cpu_isa_traits). Generators, config
// checks, kernel names, the tests and the ISA gating read these rows
// instead of restating "32 : 16" or "tier >= kAvx512Vnni" where they
// stand; adding a tier starts with a row here (docs/adding-a-kernel.md).
#ifndef W4JIT_DISPATCH_ISA_TRAITS_H_
#define W4JIT_DISPATCH_ISA_TRAITS_H_

#include <array>
#include <string>

#include "dispatch/cpu_profile.h"

namespace w4jit::internal {

struct IsaTraits {
  IsaTier tier;
  // W4JIT_ISA, `w4jit selftest --isa` and ToString(IsaTier): "avx512_vnni".
  const char* env_name;
  // The tier part of a kernel name ("..._f32tof32__avx512vnni").
  const char* suffix;
  // The JIT code's vector registers: ymm (32 bytes, 16 registers, VEX
  // forms) or zmm (64 bytes, 32 registers, EVEX forms and opmasks); 0 for
  // the reference.
  int vector_bytes;
  int vector_regs;
  bool evex;      // AVX-512: zmm, embedded broadcasts, opmask k1-k7
  bool int8_dot;  // vpdpbusd (AVX512_VNNI); AVX2 pairs vpmaddubsw, vpmaddwd
  bool bf16_dot;  // vdpbf16ps (AVX512_BF16): W4A16's bf16-dot flavour
  // The least tier whose code a kernel for this tier emits when it needs
  // only the vector width (DA8W4, the quantizer: AVX512_BF16 runs the VNNI
  // code, which is then named "avx512vnni").
  IsaTier vector_tier;
  // Intel AMX: tile registers with tdpb[su][su]d (AMX-INT8) and tdpbf16ps
  // (AMX-BF16), where the OS saves the tile state and Linux granted this
  // process the tile data (dispatch/amx_permission.h).
  bool amx_int8;
  bool amx_bf16;
  // The tier of the vector kernels that run beside the tiles (small M,
  // the quantizer, W4A16): the tier itself below AMX.
  IsaTier simd_tier;

  int lanes32() const { return vector_bytes / 4; }
};

// One row per IsaTier, in its order (row i is tier i).
inline constexpr std::array<IsaTraits, 5> kIsaTraits = {{
    {IsaTier::kRef, "ref", "ref", 0, 0, false, false, false, IsaTier::kRef,
     false, false, IsaTier::kRef},
    {IsaTier::kAvx2, "avx2", "avx2", 32, 16, false, false, false,
     IsaTier::kAvx2, false, false, IsaTier::kAvx2},
    {IsaTier::kAvx512Vnni, "avx512_vnni", "avx512vnni", 64, 32, true, true,
     false, IsaTier::kAvx512Vnni, false, false, IsaTier::kAvx512Vnni},
    {IsaTier::kAvx512Bf16, "avx512_bf16", "avx512bf16", 64, 32, true, true,
     true, IsaTier::kAvx512Vnni, false, false, IsaTier::kAvx512Bf16},
    {IsaTier::kAmx, "amx", "amx", 64, 32, true, true, true,
     IsaTier::kAvx512Vnni, true, true, IsaTier::kAvx512Bf16},
}};

static_assert(kIsaTraits[0].tier == IsaTier::kRef &&
                  kIsaTraits[1].tier == IsaTier::kAvx2 &&
                  kIsaTraits[2].tier == IsaTier::kAvx512Vnni &&
                  kIsaTraits[3].tier == IsaTier::kAvx512Bf16 &&
                  kIsaTraits[4].tier == IsaTier::kAmx,
              "kIsaTraits rows follow the IsaTier values");

constexpr const IsaTraits& TraitsOf(IsaTier tier) {
  return kIsaTraits[static_cast<int>(tier)];
}

// Whether code for `need` runs where the kernels may use `have`: `have`
// has every feature of `need` (vectors at least as wide, EVEX, each dot
// product). Not tier order: a tier with AVX-VNNI on ymm, or AVX10/256,
// would be "above" AVX2 without zmm. Only dispatch/ compares tiers by
// their order (the W4JIT_ISA cap, the defaults rows' ranges).
constexpr bool HasFeaturesOf(IsaTier have, IsaTier need) {
  const IsaTraits& h = TraitsOf(have);
  const IsaTraits& n = TraitsOf(need);
  return h.vector_bytes >= n.vector_bytes && (h.evex || !n.evex) &&
         (h.int8_dot || !n.int8_dot) && (h.bf16_dot || !n.bf16_dot) &&
         (h.amx_int8 || !n.amx_int8) && (h.amx_bf16 || !n.amx_bf16);
}

// The least tier whose code needs only vectors of `bytes` (its row's
// vector_tier is itself): kAvx2 for 32, kAvx512Vnni for 64; kRef when no
// tier's vectors are that wide.
constexpr IsaTier TierOfVectorBytes(int bytes) {
  for (const IsaTraits& t : kIsaTraits) {
    if (t.vector_bytes > 0 && t.vector_bytes == bytes &&
        t.vector_tier == t.tier && !t.amx_int8) {
      return t.tier;
    }
  }
  return IsaTier::kRef;
}

// "ref, avx2, avx512_vnni, avx512_bf16, amx": the W4JIT_ISA names, in
// order.
std::string IsaTierNames();

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_ISA_TRAITS_H_
