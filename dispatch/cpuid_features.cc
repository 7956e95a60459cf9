#include "dispatch/cpuid_features.h"

#include <cpuid.h>

#include <cstring>

namespace w4jit::internal {
namespace {

bool Bit(uint32_t word, int bit) { return (word >> bit) & 1u; }

}  // namespace

CpuidWords HostCpuidWords() {
  CpuidWords w;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  __cpuid(0, eax, ebx, ecx, edx);
  std::memcpy(w.vendor, &ebx, 4);
  std::memcpy(w.vendor + 4, &edx, 4);
  std::memcpy(w.vendor + 8, &ecx, 4);
  if (max_leaf >= 1) {
    __cpuid(1, eax, ebx, ecx, edx);
    w.leaf1_eax = eax;
    w.leaf1_ecx = ecx;
  }
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    w.leaf7_ebx = ebx;
    w.leaf7_ecx = ecx;
    w.leaf7_edx = edx;
    const unsigned subleaves = eax;
    if (subleaves >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      w.leaf7_1_eax = eax;
    }
  }
  if (Bit(w.leaf1_ecx, 27)) {  // OSXSAVE: XGETBV is allowed
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    w.xcr0 = (uint64_t{hi} << 32) | lo;
  }
  return w;
}

Vendor VendorFromCpuid(const CpuidWords& w) {
  if (std::strcmp(w.vendor, "AuthenticAMD") == 0) return Vendor::kAmd;
  if (std::strcmp(w.vendor, "GenuineIntel") == 0) return Vendor::kIntel;
  return Vendor::kUnknown;
}

CpuFeatures FeaturesFromCpuid(const CpuidWords& w) {
  // XCR0: 1 SSE, 2 AVX (ymm upper halves); 5 opmask, 6 zmm0-15 upper
  // halves, 7 zmm16-31; 17 XTILECFG, 18 XTILEDATA.
  const bool os_avx = (w.xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (w.xcr0 & 0xE0) == 0xE0;
  const bool os_amx = (w.xcr0 & 0x60000) == 0x60000;
  CpuFeatures f;
  f.fma = os_avx && Bit(w.leaf1_ecx, 12);
  f.f16c = os_avx && Bit(w.leaf1_ecx, 29);
  f.avx2 = os_avx && Bit(w.leaf7_ebx, 5);
  f.avx512f = os_avx512 && Bit(w.leaf7_ebx, 16);
  f.avx512dq = os_avx512 && Bit(w.leaf7_ebx, 17);
  f.avx512bw = os_avx512 && Bit(w.leaf7_ebx, 30);
  f.avx512vl = os_avx512 && Bit(w.leaf7_ebx, 31);
  f.avx512vnni = os_avx512 && Bit(w.leaf7_ecx, 11);
  f.avx512bf16 = os_avx512 && Bit(w.leaf7_1_eax, 5);
  f.avx_vnni = os_avx && Bit(w.leaf7_1_eax, 4);
  f.amx_tile = os_amx && Bit(w.leaf7_edx, 24);
  f.amx_bf16 = f.amx_tile && Bit(w.leaf7_edx, 22);
  f.amx_int8 = f.amx_tile && Bit(w.leaf7_edx, 25);
  return f;
}

}  // namespace w4jit::internal
