// The ISA features w4jit dispatches on, read from CPUID and XGETBV directly.
//
// Why not cpuinfo's cpuinfo_has_x86_*(): they are inline reads of the
// global struct cpuinfo_isa, whose layout changes between cpuinfo releases.
// Inside a host that loads its own, newer cpuinfo first (PyPI's libtorch.so
// exports one), the dynamic linker binds w4jit's reference to the host's
// struct, and Debian's header reads the wrong fields: on an AVX2 Zen 3
// under torch 2.14 w4jit saw no AVX2 and ran every layer on the reference
// path. CPUID has no such ABI: the vendor and the signature come from it
// too. cpuinfo still gives the caches, cores and the name.
#ifndef W4JIT_DISPATCH_CPUID_FEATURES_H_
#define W4JIT_DISPATCH_CPUID_FEATURES_H_

#include <cstdint>

#include "dispatch/cpu_profile.h"

namespace w4jit::internal {

// The raw CPUID words the features come from, and the XCR0 the OS set.
struct CpuidWords {
  char vendor[13] = {};    // leaf 0: "AuthenticAMD", "GenuineIntel"
  uint32_t leaf1_eax = 0;  // the signature (family, model, stepping)
  uint32_t leaf1_ecx = 0;
  uint32_t leaf7_ebx = 0;    // leaf 7, subleaf 0
  uint32_t leaf7_ecx = 0;    // leaf 7, subleaf 0
  uint32_t leaf7_edx = 0;    // leaf 7, subleaf 0
  uint32_t leaf7_1_eax = 0;  // leaf 7, subleaf 1
  uint64_t xcr0 = 0;         // 0 where OSXSAVE is off
};

// This CPU's words.
CpuidWords HostCpuidWords();

// The vendor the leaf-0 string names.
Vendor VendorFromCpuid(const CpuidWords& words);

// The features (everything but fp256) the words give: an AVX feature only
// where the OS saves the ymm state (XCR0 bits 1-2), an AVX-512 one only
// where it also saves the opmask and zmm state (bits 5-7), an AMX one only
// where it saves the tile config and data (bits 17-18).
CpuFeatures FeaturesFromCpuid(const CpuidWords& words);

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_CPUID_FEATURES_H_
