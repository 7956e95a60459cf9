// What a test may execute on this machine, what a kernel name says, and the
// one list of ISA paths the kernel tests run over.
//
// Tests decide whether to run a tier's kernels with CanRunTier (or
// StartIsaRun), never from the hardware alone: W4JIT_ISA=avx2 (or
// avx512_vnni) on a bigger machine then runs the suite exactly as an
// AVX2-only (or AVX-512 VNNI without BF16) CPU would, and W4JIT_ISA=ref as
// a CPU without a JIT tier.
//
// Coverage: a test that runs a tier's kernels says so with StartIsaRun (or
// StartIsaPathRun, for a path with its flavour forced). At the end of a
// whole-suite run (no --gtest_filter), or of any run with
// W4JIT_TEST_ISA_COVERAGE=1, a global environment fails if the CPU (after
// W4JIT_ISA) has a JIT tier, or can run an ISA path (tier and W4A16
// flavour), that no test ran.
#ifndef W4JIT_TESTS_UTIL_ISA_H_
#define W4JIT_TESTS_UTIL_ISA_H_

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"

namespace w4jit::testing {

// The CPU has `tier` and W4JIT_ISA does not cap it away.
bool CanRunTier(internal::IsaTier tier);

// For GTEST_SKIP: "this CPU lacks avx512_bf16" or "W4JIT_ISA=avx2 caps
// the kernels below avx512_bf16".
std::string WhyCannotRunTier(internal::IsaTier tier);

// Checks that `name` is a JIT kernel for `isa` (the suffix after "__":
// "avx2", "avx512vnni", "avx512bf16") and, unless `flavour` is empty, of
// that flavour ("fma", "bf16dot"): one of the "_"-separated fields before
// the suffix, wherever it stands (fields such as "_bias" may follow it).
::testing::AssertionResult KernelNameIs(const std::string& name,
                                        std::string_view flavour,
                                        std::string_view isa);

// One JIT path of the kernel tests: the tier (as W4JIT_ISA would cap it),
// the W4A16 flavour and vector width it brings, and what its W4A16 kernels
// are named ("..._<flavour>_...__<suffix>").
struct IsaPath {
  internal::IsaTier tier;
  internal::Flavor flavor;
  int vector_bits;
  const char* suffix;   // "avx2", "avx512vnni", "avx512bf16"
  const char* flavour;  // "fma", "bf16dot"
};
// gtest prints a path as "avx512bf16 (bf16dot, 512-bit)".
void PrintTo(const IsaPath& path, std::ostream* os);

// Every JIT path, lowest tier first: avx2 (fma, 256), avx512vnni (fma,
// 512), avx512bf16 (bf16dot, 512). The one list the kernel tests run over.
const std::vector<IsaPath>& IsaPaths();
// Their tiers; with the reference tier first; DA8W4's own (its AVX512_BF16
// tier runs the VNNI code).
std::vector<internal::IsaTier> IsaTiers();
std::vector<internal::IsaTier> IsaTiersWithRef();
std::vector<internal::IsaTier> Da8w4IsaTiers();

// Test-name printers for INSTANTIATE_TEST_SUITE_P: the path's suffix, the
// tier's W4JIT_ISA name ("avx512_vnni").
std::string IsaPathName(const ::testing::TestParamInfo<IsaPath>& info);
std::string IsaTierName(
    const ::testing::TestParamInfo<internal::IsaTier>& info);

// CanRunTier(tier), and if so records that a test runs the tier's kernels
// (the coverage check). Use where a test decides to run them:
//   if (!StartIsaRun(tier)) GTEST_SKIP() << WhyCannotRunTier(tier);
bool StartIsaRun(internal::IsaTier tier);
// StartIsaRun(path.tier), and if so also records that a test ran the
// path's W4A16 flavour (the coverage check counts paths as well as tiers:
// a CPU whose defaults pick one flavour must still run the other). Use in
// tests over IsaPaths that force the path's flavour (ScopedW4a16Params-
// Override), never where the defaults choose it.
bool StartIsaPathRun(const IsaPath& path);
// The JIT tiers the CPU has (after W4JIT_ISA) that no test has run.
std::vector<internal::IsaTier> IsaTiersNeverRun();
// The IsaPaths the CPU can run (after W4JIT_ISA) that no test has run.
std::vector<IsaPath> IsaPathsNeverRun();

}  // namespace w4jit::testing

namespace w4jit::internal {
// gtest prints a tier by its W4JIT_ISA name ("avx512_vnni").
void PrintTo(IsaTier tier, std::ostream* os);
}  // namespace w4jit::internal

#endif  // W4JIT_TESTS_UTIL_ISA_H_
