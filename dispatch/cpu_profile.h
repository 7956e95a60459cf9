// What the dispatcher knows about the CPU: vendor, Zen generation, the ISA
// tier kernels may use, and the caches that size the blocking.
#ifndef W4JIT_DISPATCH_CPU_PROFILE_H_
#define W4JIT_DISPATCH_CPU_PROFILE_H_

#include <cstdint>
#include <string>

namespace w4jit::internal {

// The tiers W4JIT_ISA names, each with more features than the one before.
// What a tier's kernels may use is its row's feature bits
// (dispatch/isa_traits.h): code asks for a feature, not for a place in
// this order.
enum class IsaTier : int {
  kRef = 0,         // portable C++ only
  kAvx2 = 1,        // AVX2 + FMA (Zen 2/3, Haswell and later)
  kAvx512Vnni = 2,  // AVX-512 F/BW/VL/DQ + VNNI
  kAvx512Bf16 = 3,  // ... + AVX512_BF16 (Zen 4/5, Cooper Lake, SPR)
  kAmx = 4,         // ... + AMX-TILE/INT8/BF16, permitted (SPR and later)
};

enum class Vendor : int { kUnknown = 0, kIntel = 1, kAmd = 2 };

// Raw feature bits the classifier needs (from CPUID, via cpuinfo or not).
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;  // vcvtph2ps: W4A16's f16 scale storage
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avx_vnni = false;
  // AMX (CPUID leaf 7 EDX bits 24, 22, 25), only where the OS saves the
  // tile state (XCR0 bits 17-18). Linux also wants a per-process
  // permission request before the first tile instruction
  // (dispatch/amx_permission.h); the kAmx tier needs all three and it.
  bool amx_tile = false;
  bool amx_bf16 = false;
  bool amx_int8 = false;
  // CPUID 0x8000001A EAX bit 2 (FP256): the AVX-512 datapath is 256 bits
  // wide (Zen 5 mobile parts); false on full 512-bit datapaths.
  bool fp256 = false;
};

struct CpuProfile {
  Vendor vendor = Vendor::kUnknown;
  uint32_t signature = 0;  // CPUID leaf 1 EAX
  int family = 0;          // display family (base + extended)
  int model = 0;           // display model (base + extended << 4)
  int stepping = 0;
  int zen_generation = 0;           // 1..5 for AMD Zen, 0 otherwise
  IsaTier isa = IsaTier::kRef;      // what the hardware supports
  IsaTier isa_cap = IsaTier::kRef;  // after W4JIT_ISA: what kernels use
  // The AMX tile data permission: "" where the CPU has no AMX (nothing
  // was asked), "granted", or why not (then isa is below kAmx).
  std::string amx_permission;
  int native_vector_bits = 128;  // width of the vector datapath
  CpuFeatures features;
  int64_t l1d_bytes = 0;  // per core
  int64_t l2_bytes = 0;   // per core
  int64_t l3_bytes = 0;   // total of one L3 instance
  int cores = 1;
  std::string name;  // marketing name when known
};

// Pure: from (vendor, signature, feature bits) to the generation, the
// tier and the native width. Caches and cores are left as given.
CpuProfile ClassifyCpu(Vendor vendor, uint32_t signature,
                       const CpuFeatures& features);

// The running machine, detected once (cpuinfo + CPUID) and cached, with
// W4JIT_ISA applied as a cap.
const CpuProfile& HostCpu();

// Parses "ref" | "avx2" | "avx512_vnni" | "avx512_bf16" | "amx".
bool ParseIsaTier(const std::string& text, IsaTier* out);
const char* ToString(IsaTier tier);

// The tier kernels may use now: HostCpu().isa_cap, lowered further by a
// test-time override (see ScopedIsaCap) if one is active.
IsaTier ActiveIsa();

// Test hook: caps the tier used by layers created while it lives.
class ScopedIsaCap {
 public:
  explicit ScopedIsaCap(IsaTier cap);
  ~ScopedIsaCap();
  ScopedIsaCap(const ScopedIsaCap&) = delete;
  ScopedIsaCap& operator=(const ScopedIsaCap&) = delete;

 private:
  int previous_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_CPU_PROFILE_H_
