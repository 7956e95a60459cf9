// Detection of the running CPU: CPUID for the vendor, the signature (the
// Zen generation: Debian's 2022 cpuinfo does not know Zen 4/5) and the ISA
// features (cpuid_features.h); cpuinfo for caches, cores and the name.
#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/env.h"
#include "base/log.h"
#include "cpuinfo.h"
#include "dispatch/amx_permission.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/cpuid_caches.h"
#include "dispatch/cpuid_features.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {
namespace {

// -1: no test override active.
std::atomic<int> g_scoped_cap{-1};

bool Fp256Datapath() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // unsigned: gcc declares the result unsigned, clang int.
  if (static_cast<unsigned>(__get_cpuid_max(0x80000000u, nullptr)) <
      0x8000001Au) {
    return false;
  }
  __cpuid(0x8000001Au, eax, ebx, ecx, edx);
  return (eax >> 2) & 1;  // FP256: 512-bit ops run as two 256-bit halves
}

CpuProfile Detect() {
  if (!cpuinfo_initialize()) {
    Log(LogLevel::kWarning,
        "cpuinfo could not read this CPU; using the reference path");
    CpuProfile p;
    p.name = "unknown (cpuinfo failed)";
    return p;
  }
  // Vendor, signature and features from CPUID itself (cpuid_features.h
  // says why not from cpuinfo's structs).
  const CpuidWords words = HostCpuidWords();
  const Vendor vendor = VendorFromCpuid(words);
  const uint32_t signature = words.leaf1_eax;
  CpuFeatures f = FeaturesFromCpuid(words);
  f.fp256 = vendor == Vendor::kAmd && Fp256Datapath();

  CpuProfile p = ClassifyCpu(vendor, signature, f);
  if (f.amx_tile) {
    // Asked once per process, here (dispatch/amx_permission.h); without it
    // the kernels stay on the vector tiers.
    const absl::Status amx = RequestAmxTileData();
    p.amx_permission = amx.ok() ? "granted" : std::string(amx.message());
    // Refused: the tier of the vector kernels that run beside the tiles.
    if (!amx.ok() && p.isa != TraitsOf(p.isa).simd_tier) {
      p.isa = p.isa_cap = TraitsOf(p.isa).simd_tier;
      Log(LogLevel::kWarning,
          absl::StrCat("AMX tiles unused, the kernels use ", ToString(p.isa),
                       ": ", amx.message()));
    }
  }
  if (const cpuinfo_cache* c = cpuinfo_get_l1d_cache(0)) p.l1d_bytes = c->size;
  if (const cpuinfo_cache* c = cpuinfo_get_l2_cache(0)) p.l2_bytes = c->size;
  if (const cpuinfo_cache* c = cpuinfo_get_l3_cache(0)) p.l3_bytes = c->size;
  if (vendor == Vendor::kAmd &&
      (p.l1d_bytes == 0 || p.l2_bytes == 0 || p.l3_bytes == 0)) {
    const LegacyCacheSizes legacy = HostLegacyAmdCaches();
    if (p.l1d_bytes == 0) p.l1d_bytes = legacy.l1d_bytes;
    if (p.l2_bytes == 0) p.l2_bytes = legacy.l2_bytes;
    if (p.l3_bytes == 0) p.l3_bytes = legacy.l3_bytes;
  }
  // The same VMs hide the topology leaves, and cpuinfo then finds no
  // caches and counts one core for all the processors; such VMs give one
  // thread per vCPU core, so the processors are the cores there.
  const bool topology_hidden = cpuinfo_get_l1d_caches_count() == 0;
  p.cores =
      static_cast<int>(std::max(topology_hidden ? cpuinfo_get_processors_count()
                                                : cpuinfo_get_cores_count(),
                                1u));
  if (const cpuinfo_package* pkg = cpuinfo_get_package(0)) p.name = pkg->name;

  if (const char* env = GetEnv(EnvVar::kIsa); env != nullptr && *env) {
    IsaTier cap;
    if (!ParseIsaTier(env, &cap)) {
      Log(LogLevel::kWarning, absl::StrCat("W4JIT_ISA=", env, " is not one of ",
                                           IsaTierNames(), "; ignored"));
    } else if (!HasFeaturesOf(p.isa, cap)) {
      Log(LogLevel::kWarning,
          absl::StrCat("W4JIT_ISA=", env, " is above what this CPU supports (",
                       ToString(p.isa), "); using ", ToString(p.isa)));
    } else {
      p.isa_cap = cap;
    }
  }
  return p;
}

}  // namespace

const CpuProfile& HostCpu() {
  static const CpuProfile* profile = new CpuProfile(Detect());
  return *profile;
}

IsaTier ActiveIsa() {
  IsaTier cap = HostCpu().isa_cap;
  const int scoped = g_scoped_cap.load();
  // The scoped cap where the cap runs its code (a cap above it stays).
  if (scoped >= 0 && HasFeaturesOf(cap, static_cast<IsaTier>(scoped))) {
    cap = static_cast<IsaTier>(scoped);
  }
  return cap;
}

ScopedIsaCap::ScopedIsaCap(IsaTier cap)
    : previous_(g_scoped_cap.exchange(static_cast<int>(cap))) {}

ScopedIsaCap::~ScopedIsaCap() { g_scoped_cap.store(previous_); }

}  // namespace w4jit::internal
