// What each ISA tier brings, in one table: its W4JIT_ISA name, the suffix
// of kernel names, the vector registers the JIT code uses and its feature
// bits (after oneDNN's cpu_isa_traits). Generators, config checks, kernel
// names, defaults rows, the tests and the ISA gating read these rows
// instead of restating "32 : 16" or "tier >= kAvx512Vnni" where they
// stand; adding a tier starts with a row here (docs/adding-a-kernel.md).
#ifndef W4JIT_DISPATCH_ISA_TRAITS_H_
#define W4JIT_DISPATCH_ISA_TRAITS_H_

#include <array>
#include <cstdint>
#include <string>

#include "dispatch/cpu_profile.h"

namespace w4jit::internal {

// What a tier's kernels may use, as named feature bits (after oneDNN's
// cpu_isa_traits, whose ISAs are unions of feature bits with
// is_superset/mayiuse). Generators, plans, parameter checks and defaults
// rows ask for a feature ("has VNNI on zmm"), never for a tier's place in
// the order: a tier with some features of another and not all (AVX-VNNI,
// vpdpbusd on ymm; AVX10/256) is then a new row with its own bits, not a
// new comparison at each site.
enum class IsaFeature : uint32_t {
  kAvx2 = 1u << 0,    // AVX2 + FMA: 16 ymm, VEX forms
  kAvx512 = 1u << 1,  // AVX-512 F/BW/VL/DQ: 32 zmm, EVEX forms, opmasks
  // vpdpbusd on zmm (AVX512_VNNI): DA8W4's int8 dot product, int32
  // accumulators. Without it DA8W4 pairs vpmaddubsw and vpmaddwd.
  kAvx512Vnni = 1u << 2,
  kAvx512Bf16 = 1u << 3,  // vdpbf16ps: W4A16's bf16-dot flavour
  // Intel AMX tiles where the OS saves the tile state and Linux granted
  // this process the tile data (dispatch/amx_permission.h): tdpb[su][su]d
  // (AMX-INT8, DA8W4's tiles) and tdpbf16ps (AMX-BF16, W4A16's tiles).
  kAmxInt8 = 1u << 4,
  kAmxBf16 = 1u << 5,
};

// A set of IsaFeature bits.
class IsaFeatures {
 public:
  constexpr IsaFeatures() = default;
  // A feature is the set of itself, so that `Has(IsaFeature::kAvx512)`
  // and rows' `kAvx2 | kAvx512` read as written.
  constexpr IsaFeatures(IsaFeature f)  // NOLINT(runtime/explicit)
      : bits_(static_cast<uint32_t>(f)) {}

  constexpr IsaFeatures operator|(IsaFeatures o) const {
    IsaFeatures u;
    u.bits_ = bits_ | o.bits_;
    return u;
  }
  // Every feature of `need` is here (oneDNN's is_superset); the empty set
  // is in every set.
  constexpr bool Has(IsaFeatures need) const {
    return (bits_ & need.bits_) == need.bits_;
  }
  constexpr bool operator==(IsaFeatures o) const { return bits_ == o.bits_; }
  constexpr bool operator!=(IsaFeatures o) const { return bits_ != o.bits_; }
  // "avx512|avx512_vnni": the features' names joined by '|', "none" for
  // the empty set (messages, tests).
  std::string str() const;

 private:
  uint32_t bits_ = 0;
};

constexpr IsaFeatures operator|(IsaFeature a, IsaFeature b) {
  return IsaFeatures(a) | b;
}

struct IsaTraits {
  IsaTier tier;
  // W4JIT_ISA, `w4jit selftest --isa` and ToString(IsaTier): "avx512_vnni".
  const char* env_name;
  // The tier part of a kernel name ("..._f32tof32__avx512vnni").
  const char* suffix;
  // The JIT code's vector registers: ymm (32 bytes, 16 registers) or zmm
  // (64 bytes, 32 registers); 0 for the reference.
  int vector_bytes;
  int vector_regs;
  IsaFeatures features;
  // The least tier whose code a kernel for this tier emits when it needs
  // only the vector width (DA8W4, the quantizer: AVX512_BF16 runs the VNNI
  // code, which is then named "avx512vnni").
  IsaTier vector_tier;
  // The tier of the vector kernels that run beside the tiles (small M,
  // the quantizer, W4A16): the tier itself where it has no tiles.
  IsaTier simd_tier;

  int lanes32() const { return vector_bytes / 4; }
  constexpr bool Has(IsaFeatures need) const { return features.Has(need); }
};

// The rows' feature sets, each the set of the tier before it and what the
// tier adds (every tier today is a superset of the one before; a row that
// is not would spell its own set).
namespace isa_features {
inline constexpr IsaFeatures kAvx2Row = IsaFeature::kAvx2;
inline constexpr IsaFeatures kAvx512VnniRow =
    kAvx2Row | IsaFeature::kAvx512 | IsaFeature::kAvx512Vnni;
inline constexpr IsaFeatures kAvx512Bf16Row =
    kAvx512VnniRow | IsaFeature::kAvx512Bf16;
inline constexpr IsaFeatures kAmxRow =
    kAvx512Bf16Row | IsaFeature::kAmxInt8 | IsaFeature::kAmxBf16;
}  // namespace isa_features

// One row per IsaTier, in its order (row i is tier i).
inline constexpr std::array<IsaTraits, 5> kIsaTraits = {{
    {IsaTier::kRef, "ref", "ref", 0, 0, IsaFeatures(), IsaTier::kRef,
     IsaTier::kRef},
    {IsaTier::kAvx2, "avx2", "avx2", 32, 16, isa_features::kAvx2Row,
     IsaTier::kAvx2, IsaTier::kAvx2},
    {IsaTier::kAvx512Vnni, "avx512_vnni", "avx512vnni", 64, 32,
     isa_features::kAvx512VnniRow, IsaTier::kAvx512Vnni, IsaTier::kAvx512Vnni},
    {IsaTier::kAvx512Bf16, "avx512_bf16", "avx512bf16", 64, 32,
     isa_features::kAvx512Bf16Row, IsaTier::kAvx512Vnni, IsaTier::kAvx512Bf16},
    {IsaTier::kAmx, "amx", "amx", 64, 32, isa_features::kAmxRow,
     IsaTier::kAvx512Vnni, IsaTier::kAvx512Bf16},
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

// Whether the kernels of `tier` may use every feature of `need` (oneDNN's
// mayiuse, for a tier rather than the host).
constexpr bool TierHas(IsaTier tier, IsaFeatures need) {
  return TraitsOf(tier).Has(need);
}

// Whether code for `need` runs where the kernels may use `have`: `have`
// has every feature of `need` and vectors at least as wide.
constexpr bool HasFeaturesOf(IsaTier have, IsaTier need) {
  const IsaTraits& h = TraitsOf(have);
  const IsaTraits& n = TraitsOf(need);
  return h.vector_bytes >= n.vector_bytes && h.Has(n.features);
}

// The least tier with every feature of `need`, whose code is that of the
// tier itself (its vector_tier and simd_tier): where a kernel's name says
// which features its code needs (W4A16's bf16 dot names avx512bf16, the
// DA8W4 tiles amx). kRef when no tier has them.
constexpr IsaTier LeastTierWith(IsaFeatures need) {
  for (const IsaTraits& t : kIsaTraits) {
    if (t.Has(need)) return t.tier;
  }
  return IsaTier::kRef;
}

// The least tier whose code needs only vectors of `bytes` (its row's
// vector_tier is itself): kAvx2 for 32, kAvx512Vnni for 64; kRef when no
// tier's vectors are that wide.
constexpr IsaTier TierOfVectorBytes(int bytes) {
  for (const IsaTraits& t : kIsaTraits) {
    if (t.vector_bytes > 0 && t.vector_bytes == bytes &&
        t.vector_tier == t.tier) {
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
