// Pure classification of a CPU from its CPUID signature and feature bits.
// Kept free of any detection so that tests can feed recorded signatures of
// CPUs this machine is not (Rome, Genoa, Turin, Sapphire Rapids, ...).
#include <algorithm>
#include <string>

#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

// AMD family 0x17 / 0x19 / 0x1A model ranges, from AMD's revision guides
// and the Linux kernel's x86 model lists. Zen+ (Pinnacle Ridge, Picasso)
// is reported as generation 1: it has Zen 1's execution units.
int ZenGeneration(int family, int model) {
  switch (family) {
    case 0x17:
      return model < 0x30 ? 1 : 2;
    case 0x19:
      // Zen 4: Genoa/Storm Peak 0x10-0x1F, Raphael 0x60-0x6F, Phoenix and
      // Hawk Point 0x70-0x7F, Bergamo/Siena 0xA0-0xAF. Everything else in
      // the family (Milan 0x00-0x0F, Vermeer 0x20-0x2F, Rembrandt 0x40-0x4F,
      // Cezanne 0x50-0x5F) is Zen 3.
      if ((model >= 0x10 && model <= 0x1F) ||
          (model >= 0x60 && model <= 0x7F) ||
          (model >= 0xA0 && model <= 0xAF)) {
        return 4;
      }
      return 3;
    case 0x1A:
      // Turin 0x00-0x1F, Strix Point 0x20-0x2F, Granite Ridge 0x40-0x4F,
      // Krackan / Strix Halo 0x60-0x7F. Later models of this family are
      // assumed to keep Zen 5's execution units until known otherwise.
      return 5;
    default:
      return 0;
  }
}

IsaTier TierFromFeatures(const CpuFeatures& f) {
  const bool avx512 = f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  const bool bf16 = avx512 && f.avx512vnni && f.avx512bf16;
  // AMX as the kernels use it: int8 and bf16 tiles (Detect() lowers the
  // tier again where Linux refuses the tile data).
  if (bf16 && f.amx_tile && f.amx_int8 && f.amx_bf16) return IsaTier::kAmx;
  if (bf16) return IsaTier::kAvx512Bf16;
  if (avx512 && f.avx512vnni) return IsaTier::kAvx512Vnni;
  if (f.avx2 && f.fma) return IsaTier::kAvx2;
  return IsaTier::kRef;
}

}  // namespace

CpuProfile ClassifyCpu(Vendor vendor, uint32_t signature,
                       const CpuFeatures& features) {
  CpuProfile p;
  p.vendor = vendor;
  p.signature = signature;
  p.features = features;
  const int base_family = (signature >> 8) & 0xF;
  const int ext_family = (signature >> 20) & 0xFF;
  const int base_model = (signature >> 4) & 0xF;
  const int ext_model = (signature >> 16) & 0xF;
  p.family = base_family == 0xF ? base_family + ext_family : base_family;
  p.model = (base_family == 0xF || base_family == 0x6)
                ? (ext_model << 4) | base_model
                : base_model;
  p.stepping = signature & 0xF;
  p.zen_generation =
      vendor == Vendor::kAmd ? ZenGeneration(p.family, p.model) : 0;
  p.isa = TierFromFeatures(features);
  p.isa_cap = p.isa;

  // Width of the vector datapath. Zen 4 executes 512-bit ops as two 256-bit
  // halves; Zen 5 desktop/server parts have a full 512-bit datapath, mobile
  // parts report FP256 in CPUID 0x8000001A and split like Zen 4.
  if (TierHas(p.isa, IsaFeature::kAvx512) || features.avx512f) {
    if (p.zen_generation == 4 || (p.zen_generation >= 5 && features.fp256)) {
      p.native_vector_bits = 256;
    } else {
      p.native_vector_bits = 512;
    }
  } else if (features.avx2) {
    p.native_vector_bits = 256;
  } else {
    p.native_vector_bits = 128;
  }
  return p;
}

bool ParseIsaTier(const std::string& text, IsaTier* out) {
  for (const IsaTraits& t : kIsaTraits) {
    if (text == t.env_name) {
      *out = t.tier;
      return true;
    }
  }
  return false;
}

const char* ToString(IsaTier tier) { return TraitsOf(tier).env_name; }

}  // namespace w4jit::internal
