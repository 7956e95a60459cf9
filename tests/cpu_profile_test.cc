// Zen generation and ISA tier from recorded CPUID signatures: detection on
// CPUs this machine is not.
#include "dispatch/cpu_profile.h"

#include <cstdlib>
#include <cstring>

#include "cpuinfo.h"
#include "dispatch/cpuid_caches.h"
#include "dispatch/cpuid_features.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "tests/util/isa.h"

namespace w4jit::internal {
namespace {

CpuFeatures Avx2Only() {
  CpuFeatures f;
  f.avx2 = f.fma = true;
  return f;
}

CpuFeatures Avx512(bool bf16) {
  CpuFeatures f = Avx2Only();
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = true;
  f.avx512bf16 = bf16;
  return f;
}

struct Case {
  const char* name;
  Vendor vendor;
  uint32_t signature;
  CpuFeatures features;
  int family;
  int model;
  int zen;
  IsaTier isa;
  int vector_bits;
};

class ClassifyTest : public ::testing::TestWithParam<Case> {};

TEST_P(ClassifyTest, NamesGenerationTierAndWidth) {
  const Case& c = GetParam();
  const CpuProfile p = ClassifyCpu(c.vendor, c.signature, c.features);
  EXPECT_EQ(p.family, c.family) << c.name;
  EXPECT_EQ(p.model, c.model) << c.name;
  EXPECT_EQ(p.zen_generation, c.zen) << c.name;
  EXPECT_EQ(p.isa, c.isa) << c.name;
  EXPECT_EQ(p.isa_cap, c.isa) << c.name;
  EXPECT_EQ(p.native_vector_bits, c.vector_bits) << c.name;
}

CpuFeatures Zen5Mobile() {
  CpuFeatures f = Avx512(true);
  f.fp256 = true;
  return f;
}

INSTANTIATE_TEST_SUITE_P(
    RecordedSignatures, ClassifyTest,
    ::testing::Values(Case{"Rome", Vendor::kAmd, 0x00830F10, Avx2Only(), 0x17,
                           0x31, 2, IsaTier::kAvx2, 256},
                      Case{"Milan", Vendor::kAmd, 0x00A00F11, Avx2Only(), 0x19,
                           0x01, 3, IsaTier::kAvx2, 256},
                      Case{"Genoa", Vendor::kAmd, 0x00A10F11, Avx512(true),
                           0x19, 0x11, 4, IsaTier::kAvx512Bf16, 256},
                      Case{"Raphael", Vendor::kAmd, 0x00A60F12, Avx512(true),
                           0x19, 0x61, 4, IsaTier::kAvx512Bf16, 256},
                      Case{"Phoenix", Vendor::kAmd, 0x00A70F41, Avx512(true),
                           0x19, 0x74, 4, IsaTier::kAvx512Bf16, 256},
                      Case{"Bergamo", Vendor::kAmd, 0x00AA0F02, Avx512(true),
                           0x19, 0xA0, 4, IsaTier::kAvx512Bf16, 256},
                      Case{"Turin", Vendor::kAmd, 0x00B00F21, Avx512(true),
                           0x1A, 0x02, 5, IsaTier::kAvx512Bf16, 512},
                      Case{"StrixPoint", Vendor::kAmd, 0x00B20F40, Zen5Mobile(),
                           0x1A, 0x24, 5, IsaTier::kAvx512Bf16, 256},
                      Case{"GraniteRidge", Vendor::kAmd, 0x00B40F40,
                           Avx512(true), 0x1A, 0x44, 5, IsaTier::kAvx512Bf16,
                           512},
                      Case{"SapphireRapids", Vendor::kIntel, 0x000806F8,
                           Avx512(true), 6, 0x8F, 0, IsaTier::kAvx512Bf16, 512},
                      Case{"EmeraldRapids", Vendor::kIntel, 0x000C06F2,
                           Avx512(true), 6, 0xCF, 0, IsaTier::kAvx512Bf16, 512},
                      Case{"CascadeLake", Vendor::kIntel, 0x00050657,
                           Avx512(false), 6, 0x55, 0, IsaTier::kAvx512Vnni,
                           512},
                      Case{"NoAvx2", Vendor::kIntel, 0x000206A7, CpuFeatures{},
                           6, 0x2A, 0, IsaTier::kRef, 128}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.name);
    });

TEST(ClassifyTest, AmdFamilyOnIntelVendorIsNotZen) {
  // The generation comes from AMD's family numbering only.
  EXPECT_EQ(
      ClassifyCpu(Vendor::kIntel, 0x00A10F11, Avx512(true)).zen_generation, 0);
}

TEST(ClassifyTest, Avx512WithoutVnniIsAvx2Tier) {
  CpuFeatures f = Avx512(false);
  f.avx512vnni = false;  // Skylake-SP
  EXPECT_EQ(ClassifyCpu(Vendor::kIntel, 0x00050654, f).isa, IsaTier::kAvx2);
}

TEST(ClassifyTest, AmxTierNeedsEveryTileFeatureAndBf16) {
  CpuFeatures f = Avx512(true);
  f.amx_tile = f.amx_int8 = f.amx_bf16 = true;
  EXPECT_EQ(ClassifyCpu(Vendor::kIntel, 0x000806F8, f).isa, IsaTier::kAmx);
  f.amx_bf16 = false;
  EXPECT_EQ(ClassifyCpu(Vendor::kIntel, 0x000806F8, f).isa,
            IsaTier::kAvx512Bf16);
  // The amx tier has every feature of the AVX-512 tiers, not the reverse.
  EXPECT_TRUE(HasFeaturesOf(IsaTier::kAmx, IsaTier::kAvx512Bf16));
  EXPECT_FALSE(HasFeaturesOf(IsaTier::kAvx512Bf16, IsaTier::kAmx));
  EXPECT_EQ(TraitsOf(IsaTier::kAmx).simd_tier, IsaTier::kAvx512Bf16);
}

// The rows' feature bits: what code asks for instead of a tier's place.
TEST(IsaFeaturesTest, TiersHaveTheirFeatures) {
  EXPECT_TRUE(TierHas(IsaTier::kAvx2, IsaFeature::kAvx2));
  EXPECT_FALSE(TierHas(IsaTier::kAvx2, IsaFeature::kAvx512));
  EXPECT_FALSE(TierHas(IsaTier::kRef, IsaFeature::kAvx2));
  EXPECT_TRUE(TierHas(IsaTier::kRef, IsaFeatures()));
  EXPECT_TRUE(TierHas(IsaTier::kAvx512Vnni,
                      IsaFeature::kAvx512 | IsaFeature::kAvx512Vnni));
  EXPECT_FALSE(TierHas(IsaTier::kAvx512Vnni, IsaFeature::kAvx512Bf16));
  EXPECT_TRUE(TierHas(IsaTier::kAvx512Bf16, IsaFeature::kAvx512Bf16));
  EXPECT_FALSE(TierHas(IsaTier::kAvx512Bf16, IsaFeature::kAmxInt8));
  EXPECT_TRUE(
      TierHas(IsaTier::kAmx, IsaFeature::kAmxInt8 | IsaFeature::kAmxBf16));
  // Every tier's features contain those of the tiers whose code it runs.
  for (const IsaTraits& t : kIsaTraits) {
    EXPECT_TRUE(t.Has(TraitsOf(t.vector_tier).features)) << t.env_name;
    EXPECT_TRUE(t.Has(TraitsOf(t.simd_tier).features)) << t.env_name;
    // zmm comes with the AVX-512 bit, ymm without it.
    EXPECT_EQ(t.Has(IsaFeature::kAvx512), t.vector_bytes == 64) << t.env_name;
  }
}

TEST(IsaFeaturesTest, LeastTierWithAndNames) {
  EXPECT_EQ(LeastTierWith(IsaFeature::kAvx2), IsaTier::kAvx2);
  EXPECT_EQ(LeastTierWith(IsaFeature::kAvx512Vnni), IsaTier::kAvx512Vnni);
  EXPECT_EQ(LeastTierWith(IsaFeature::kAvx512Bf16), IsaTier::kAvx512Bf16);
  EXPECT_EQ(LeastTierWith(IsaFeature::kAmxInt8), IsaTier::kAmx);
  EXPECT_EQ(LeastTierWith(IsaFeatures()), IsaTier::kRef);
  EXPECT_EQ(TraitsOf(IsaTier::kAvx512Vnni).features.str(),
            "avx2|avx512|avx512_vnni");
  EXPECT_EQ(IsaFeatures().str(), "none");
}

TEST(IsaTierTest, ParsesEveryNameAndRejectsOthers) {
  IsaTier t;
  for (IsaTier want : w4jit::testing::IsaTiersWithRef()) {
    ASSERT_TRUE(ParseIsaTier(ToString(want), &t));
    EXPECT_EQ(t, want);
  }
  EXPECT_FALSE(ParseIsaTier("avx512", &t));
  EXPECT_FALSE(ParseIsaTier("", &t));
  EXPECT_FALSE(ParseIsaTier("AVX2", &t));
}

TEST(HostCpuTest, DetectsSomethingConsistent) {
  const CpuProfile& p = HostCpu();
  EXPECT_TRUE(HasFeaturesOf(p.isa, p.isa_cap));
  EXPECT_GE(p.cores, 1);
  EXPECT_GT(p.l1d_bytes, 0);
  if (p.vendor == Vendor::kAmd && p.family >= 0x17) {
    EXPECT_GE(p.zen_generation, 1);
  } else {
    EXPECT_EQ(p.zen_generation, 0);
  }
}

TEST(HostCpuTest, ScopedCapLowersAndRestores) {
  const IsaTier before = ActiveIsa();
  {
    ScopedIsaCap cap(IsaTier::kRef);
    EXPECT_EQ(ActiveIsa(), IsaTier::kRef);
    {
      // A cap above the hardware does not raise the tier.
      ScopedIsaCap high(kIsaTraits.back().tier);
      EXPECT_EQ(ActiveIsa(), HostCpu().isa_cap);
    }
    EXPECT_EQ(ActiveIsa(), IsaTier::kRef);
  }
  EXPECT_EQ(ActiveIsa(), before);
}

// Registers as a Zen 5 VM reported them (2026-12-03): 48 KB L1d, 1 MB L2,
// and an L3 field of 1016 x 512 KB (the package's sum over every CCD),
// which is clamped to one CCX.
TEST(LegacyAmdCachesTest, DecodesTheLegacyLeaves) {
  const LegacyCacheSizes s = DecodeLegacyAmdCaches(
      /*l1_ecx=*/(48u << 24) | 0x00080140u, /*l2_ecx=*/(1024u << 16) | 0x6140u,
      /*l3_edx=*/(1016u << 18) | 0x9140u, /*max_l3_instance_bytes=*/32 << 20);
  EXPECT_EQ(s.l1d_bytes, 48 << 10);
  EXPECT_EQ(s.l2_bytes, 1 << 20);
  EXPECT_EQ(s.l3_bytes, 32 << 20);
  // An L3 field below the clamp is taken as it is; zero leaves give zero.
  EXPECT_EQ(DecodeLegacyAmdCaches(0, 0, 16u << 18, 32 << 20).l3_bytes, 8 << 20);
  EXPECT_EQ(DecodeLegacyAmdCaches(0, 0, 0, 32 << 20).l1d_bytes, 0);
}

}  // namespace
}  // namespace w4jit::internal

namespace w4jit::internal {
namespace {

// The CPUID decode: each feature from its bit, AVX ones only with the ymm
// state saved by the OS, AVX-512 ones only with the opmask and zmm state.
TEST(CpuidFeatures, DecodesBitsAndRespectsXcr0) {
  CpuidWords w;
  w.leaf1_ecx = (1u << 12) | (1u << 29);  // fma f16c
  w.leaf7_ebx = (1u << 5) | (1u << 16) | (1u << 17) | (1u << 30) | (1u << 31);
  w.leaf7_ecx = 1u << 11;                 // vnni
  w.leaf7_1_eax = (1u << 4) | (1u << 5);  // avxvnni bf16
  w.xcr0 = 0x7 | 0xE0;
  CpuFeatures f = FeaturesFromCpuid(w);
  EXPECT_TRUE(f.fma && f.f16c && f.avx2 && f.avx_vnni);
  EXPECT_TRUE(f.avx512f && f.avx512dq && f.avx512bw && f.avx512vl);
  EXPECT_TRUE(f.avx512vnni && f.avx512bf16);
  w.xcr0 = 0x7;  // the OS does not save zmm: no AVX-512
  f = FeaturesFromCpuid(w);
  EXPECT_TRUE(f.avx2 && f.fma);
  EXPECT_FALSE(f.avx512f || f.avx512bw || f.avx512vnni || f.avx512bf16);
  w.xcr0 = 0;  // no XSAVE: nothing of AVX
  f = FeaturesFromCpuid(w);
  EXPECT_FALSE(f.avx2 || f.fma || f.f16c || f.avx_vnni);
  // AMX: tile, bf16 and int8 from leaf 7 EDX, only with the tile state
  // (XCR0 bits 17-18) saved, and bf16 / int8 only with the tiles.
  w.leaf7_edx = (1u << 24) | (1u << 22) | (1u << 25);
  w.xcr0 = 0x7 | 0xE0 | 0x60000;
  f = FeaturesFromCpuid(w);
  EXPECT_TRUE(f.amx_tile && f.amx_bf16 && f.amx_int8);
  w.xcr0 = 0x7 | 0xE0 | 0x20000;  // tile config saved, tile data not
  f = FeaturesFromCpuid(w);
  EXPECT_FALSE(f.amx_tile || f.amx_bf16 || f.amx_int8);
  w.leaf7_edx = (1u << 22) | (1u << 25);  // no AMX-TILE bit
  w.xcr0 = 0x7 | 0xE0 | 0x60000;
  f = FeaturesFromCpuid(w);
  EXPECT_FALSE(f.amx_tile || f.amx_bf16 || f.amx_int8);
  w = CpuidWords{};
  std::memcpy(w.vendor, "AuthenticAMD", 12);
  EXPECT_EQ(VendorFromCpuid(w), Vendor::kAmd);
  std::memcpy(w.vendor, "GenuineIntel", 12);
  EXPECT_EQ(VendorFromCpuid(w), Vendor::kIntel);
  std::memcpy(w.vendor, "HygonGenuine", 12);
  EXPECT_EQ(VendorFromCpuid(w), Vendor::kUnknown);
}

// On this host, where w4jit links the cpuinfo it was built with, the
// CPUID reading agrees with cpuinfo's.
TEST(CpuidFeatures, AgreesWithCpuinfoHere) {
  ASSERT_TRUE(cpuinfo_initialize());
  const CpuFeatures f = FeaturesFromCpuid(HostCpuidWords());
  EXPECT_EQ(f.avx2, cpuinfo_has_x86_avx2());
  EXPECT_EQ(f.fma, cpuinfo_has_x86_fma3());
  EXPECT_EQ(f.f16c, cpuinfo_has_x86_f16c());
  EXPECT_EQ(f.avx512f, cpuinfo_has_x86_avx512f());
  EXPECT_EQ(f.avx512bw, cpuinfo_has_x86_avx512bw());
  EXPECT_EQ(f.avx512vl, cpuinfo_has_x86_avx512vl());
  EXPECT_EQ(f.avx512dq, cpuinfo_has_x86_avx512dq());
  EXPECT_EQ(f.avx512vnni, cpuinfo_has_x86_avx512vnni());
  EXPECT_EQ(f.avx512bf16, cpuinfo_has_x86_avx512bf16());
  const cpuinfo_core* core = cpuinfo_get_core(0);
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(HostCpuidWords().leaf1_eax, core->cpuid);
}

}  // namespace
}  // namespace w4jit::internal
