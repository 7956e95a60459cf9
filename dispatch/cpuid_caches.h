// Cache sizes from CPUID's legacy AMD leaves, for hosts where cpuinfo finds
// none. Some hypervisors (seen on a Zen 5 "Turin-like" VM, 2026-12-03) hide
// the cache-topology leaves that cpuinfo reads (0x8000001D, and leaf 4) and
// expose no /sys cache directories, while the legacy leaves 0x80000005 (L1)
// and 0x80000006 (L2, L3) still answer. Without sizes the DA8W4 panels fall
// back to a guess and the benchmark sizes its cold buffers for a 1 MB LLC.
#ifndef W4JIT_DISPATCH_CPUID_CACHES_H_
#define W4JIT_DISPATCH_CPUID_CACHES_H_

#include <cstdint>

namespace w4jit::internal {

struct LegacyCacheSizes {
  int64_t l1d_bytes = 0;  // per core; 0 when the leaf does not say
  int64_t l2_bytes = 0;   // per core
  int64_t l3_bytes = 0;   // one L3 instance (see DecodeLegacyAmdCaches)
};

// Pure: from the ECX of leaf 0x80000005 and the ECX and EDX of 0x80000006.
// The L3 field counts 512 KB units of the whole L3 the leaf describes,
// which on a VM can be the package's sum over all CCDs (508 MB seen); an
// AMD L3 instance (one CCX) is at most `max_l3_instance_bytes`, so the
// result is clamped to it.
LegacyCacheSizes DecodeLegacyAmdCaches(uint32_t l1_ecx, uint32_t l2_ecx,
                                       uint32_t l3_edx,
                                       int64_t max_l3_instance_bytes);

// Reads the leaves on this CPU; all zero when they are not implemented.
LegacyCacheSizes HostLegacyAmdCaches();

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_CPUID_CACHES_H_
