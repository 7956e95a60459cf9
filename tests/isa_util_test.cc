// The ISA test utilities: the name check accepts what the kernel key
// writes, wherever "_bias" and flag fields stand, and refuses the wrong
// flavour or ISA; CanRunTier follows the W4JIT_ISA cap, not the hardware.
#include <string>
#include <vector>

#include "dispatch/isa_traits.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "tests/util/isa.h"

namespace w4jit::testing {
namespace {

using internal::Flavor;
using internal::IsaTier;

TEST(KernelNameIs, ChecksFlavourAndIsaOfRealKeys) {
  internal::KernelName key;
  key.family = internal::KernelFamily::kW4a16Gemm;
  key.isa = IsaTier::kAvx512Bf16;
  key.flavor = Flavor::kBf16Dot;
  key.act_dtype = DType::kBF16;
  key.out_dtype = DType::kBF16;
  key.n = 64;
  key.k = 128;
  key.group_size = 128;
  key.mr = 4;
  key.nr = 64;
  for (bool bias : {false, true}) {
    key.bias = bias;
    const std::string name = key.str();
    EXPECT_TRUE(KernelNameIs(name, "bf16dot", "avx512bf16"));
    EXPECT_TRUE(KernelNameIs(name, "", "avx512bf16"));
    EXPECT_FALSE(KernelNameIs(name, "fma", "avx512bf16"));
    EXPECT_FALSE(KernelNameIs(name, "bf16dot", "avx512vnni"));
    EXPECT_FALSE(KernelNameIs(name, "bf16", "avx512bf16"));  // whole fields
  }
  EXPECT_FALSE(KernelNameIs("reference_w4a16 (forced)", "", "avx2"));
}

TEST(CanRunTier, FollowsTheCapAndSaysWhy) {
  const internal::CpuProfile& cpu = internal::HostCpu();
  EXPECT_TRUE(CanRunTier(IsaTier::kRef));
  for (IsaTier t : testing::IsaTiers()) {
    EXPECT_EQ(CanRunTier(t), internal::HasFeaturesOf(cpu.isa_cap, t));
    if (!CanRunTier(t)) {
      EXPECT_NE(WhyCannotRunTier(t).find(internal::ToString(t)),
                std::string::npos);
    }
  }
}

// The one list of paths names every JIT tier once, lowest first, each with
// its own kernel-name suffix.
TEST(IsaPaths, EveryJitTierOnceInOrder) {
  const std::vector<IsaPath>& paths = IsaPaths();
  size_t jit_tiers = 0;
  // Tiers with vector code of their own: the amx tier runs its
  // avx512_bf16 vector kernels (its tiles: tests/da8w4_amx_test.cc).
  for (const internal::IsaTraits& t : internal::kIsaTraits) {
    if (t.vector_bytes > 0 && t.simd_tier == t.tier) ++jit_tiers;
  }
  ASSERT_EQ(paths.size(), jit_tiers);
  for (size_t i = 0; i < paths.size(); ++i) {
    EXPECT_EQ(static_cast<int>(paths[i].tier), static_cast<int>(i) + 1);
    EXPECT_EQ(std::string(paths[i].suffix), internal::IsaSuffix(paths[i].tier));
  }
  EXPECT_EQ(IsaTiersWithRef().front(), IsaTier::kRef);
  EXPECT_EQ(Da8w4IsaTiers().back(), IsaTier::kAvx512Vnni);
}

}  // namespace
}  // namespace w4jit::testing
