#include "dispatch/cpuid_caches.h"

#include <cpuid.h>

#include <algorithm>

namespace w4jit::internal {

LegacyCacheSizes DecodeLegacyAmdCaches(uint32_t l1_ecx, uint32_t l2_ecx,
                                       uint32_t l3_edx,
                                       int64_t max_l3_instance_bytes) {
  LegacyCacheSizes s;
  s.l1d_bytes = int64_t{l1_ecx >> 24} << 10;               // ECX[31:24] KB
  s.l2_bytes = int64_t{l2_ecx >> 16} << 10;                // ECX[31:16] KB
  const int64_t l3 = int64_t{l3_edx >> 18} * (512 << 10);  // EDX[31:18]
  s.l3_bytes = std::min(l3, max_l3_instance_bytes);
  return s;
}

LegacyCacheSizes HostLegacyAmdCaches() {
  // unsigned: gcc declares the result unsigned, clang int.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) <
      0x80000006u) {
    return {};
  }
  unsigned eax = 0, ebx = 0, l1_ecx = 0, edx = 0, l2_ecx = 0, l3_edx = 0;
  __cpuid(0x80000005u, eax, ebx, l1_ecx, edx);
  __cpuid(0x80000006u, eax, ebx, l2_ecx, l3_edx);
  // 32 MB: the L3 of one Zen 3/4/5 CCD (the X3D parts' 96 MB is the
  // exception; taking less only keeps the benchmark's L3 probe inside the
  // cache, where a larger guess would put it in DRAM).
  return DecodeLegacyAmdCaches(l1_ecx, l2_ecx, l3_edx, int64_t{32} << 20);
}

}  // namespace w4jit::internal
