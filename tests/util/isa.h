// What a test may execute on this machine, and what a kernel name says.
//
// Tests decide whether to run a tier's kernels with CanRunTier, never from
// the hardware alone: W4JIT_ISA=avx2 (or avx512_vnni) on a bigger machine
// then runs the suite exactly as an AVX2-only (or AVX-512 VNNI without
// BF16) CPU would, and W4JIT_ISA=ref as a CPU without a JIT tier.
#ifndef W4JIT_TESTS_UTIL_ISA_H_
#define W4JIT_TESTS_UTIL_ISA_H_

#include <string>
#include <string_view>

#include "dispatch/cpu_profile.h"
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

}  // namespace w4jit::testing

#endif  // W4JIT_TESTS_UTIL_ISA_H_
