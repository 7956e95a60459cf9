// `w4jit info`: what was detected on this CPU and what the library chose.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

#include "base/memory.h"
#include "cli/flags.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "runtime/kernel_cache.h"
#include "tools/commands.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::tools {
namespace {

using internal::CpuProfile;

const char* VendorName(internal::Vendor v) {
  switch (v) {
    case internal::Vendor::kIntel:
      return "Intel";
    case internal::Vendor::kAmd:
      return "AMD";
    case internal::Vendor::kUnknown:
      break;
  }
  return "unknown";
}

std::string Features(const internal::CpuFeatures& f) {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512dq, "avx512dq");
  add(f.avx512vnni, "avx512_vnni");
  add(f.avx512bf16, "avx512_bf16");
  add(f.avx_vnni, "avx_vnni");
  add(f.amx_bf16, "amx_bf16");
  add(f.amx_int8, "amx_int8");
  add(f.fp256, "fp256");
  return s.empty() ? "(none of interest)" : s;
}

std::string Kib(int64_t bytes) {
  if (bytes <= 0) return "unknown";
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  return std::to_string(bytes >> 10) + " KiB";
}

// AnonHugePages of this process in kB (from /proc/self/smaps_rollup), or
// -1 if it cannot be read.
long long AnonHugePagesKb() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("AnonHugePages:", 0) == 0) {
      return std::atoll(line.c_str() + std::strlen("AnonHugePages:"));
    }
  }
  return -1;
}

// Whether a buffer that asks for 2 MB pages gets them: allocates and
// touches 8 MB the way a layer's packed weights are, and compares this
// process's AnonHugePages before and after.
std::string HugePagesGranted() {
  const long long before = AnonHugePagesKb();
  if (before < 0) return "cannot tell (no /proc/self/smaps_rollup)";
  constexpr size_t kBytes = size_t{8} << 20;
  void* p = nullptr;
  {
    internal::ScopedHugePages huge(true);
    p = internal::AlignedAllocate(kBytes, 64);
  }
  std::memset(p, 1, kBytes);
  const long long after = AnonHugePagesKb();
  internal::AlignedFree(p, kBytes);
  return after > before
             ? "granted on request (" + std::to_string(after - before) +
                   " kB of an 8 MB test buffer)"
             : std::string("not granted to a buffer that asks");
}

}  // namespace

int RunInfo(int argc, char** argv) {
  std::unique_ptr<CLI::App> app = flags::NewApp(
      "w4jit info",
      "Prints the detected CPU profile, the ISA tier kernels use (W4JIT_ISA "
      "caps it), the thread count, the tuning file, huge pages and the "
      "kernel cache.");
  const absl::StatusOr<bool> help = flags::Parse(*app, argc, argv);
  if (!help.ok()) {
    std::fprintf(stderr, "w4jit info: %s\n",
                 std::string(help.status().message()).c_str());
    return 2;
  }
  if (*help) {
    std::fputs(app->help().c_str(), stdout);
    return 0;
  }
  const CpuProfile& p = internal::HostCpu();
  const char* env_isa = std::getenv("W4JIT_ISA");
  std::printf("w4jit %s\n", Version());
  std::printf("cpu            %s %s\n", VendorName(p.vendor), p.name.c_str());
  std::printf(
      "signature      0x%08X (family 0x%X, model 0x%02X, stepping %d)\n",
      p.signature, p.family, p.model, p.stepping);
  if (p.zen_generation > 0) {
    std::printf("zen generation Zen %d\n", p.zen_generation);
  } else {
    std::printf("zen generation none (not an AMD Zen CPU)\n");
  }
  std::printf("features       %s\n", Features(p.features).c_str());
  std::printf("vector width   %d-bit datapath\n", p.native_vector_bits);
  std::printf("caches         L1d %s, L2 %s per core; L3 %s\n",
              Kib(p.l1d_bytes).c_str(), Kib(p.l2_bytes).c_str(),
              Kib(p.l3_bytes).c_str());
  std::printf("cores          %d\n", p.cores);
  std::printf("isa detected   %s\n", internal::ToString(p.isa));
  std::printf("W4JIT_ISA      %s\n", env_isa && *env_isa ? env_isa : "(unset)");
  std::printf("isa chosen     %s\n", internal::ToString(internal::ActiveIsa()));
  std::printf("amx tiles      %s\n",
              p.amx_permission.empty()
                  ? "none (the CPU or the OS has no AMX tile state)"
                  : ("tile data permission " + p.amx_permission).c_str());
  std::printf("threads        %d\n", GetNumThreads());
  const internal::TuningState tuning = internal::ActiveTuning();
  std::printf("cpu class      %s (tuning files apply per class)\n",
              internal::CpuClassOf(p, internal::ActiveIsa()).c_str());
  std::printf("tuning file    %s: %s\n",
              tuning.path.empty() ? "(none; W4JIT_TUNING_FILE unset)"
                                  : tuning.path.c_str(),
              tuning.status.c_str());
  if (tuning.file) {
    for (const internal::TuningEntry& e : tuning.file->entries) {
      std::string params;
      for (const auto& [name, value] : e.params) {
        params += " " + name + "=" + std::to_string(value);
      }
      std::printf("  entry        %s n=%lld k=%lld g=%lld:%s\n",
                  ToString(e.mode), static_cast<long long>(e.n),
                  static_cast<long long>(e.k),
                  static_cast<long long>(e.group_size), params.c_str());
    }
  }
  const char* thp_env = std::getenv("W4JIT_HUGEPAGES");
  std::printf(
      "huge pages     transparent huge pages: %s; %s (W4JIT_HUGEPAGES=%s; "
      "LayerOptions::huge_pages asks per layer)\n",
      internal::TransparentHugePagesMode(), HugePagesGranted().c_str(),
      thp_env != nullptr && *thp_env ? thp_env : "(unset)");
  const internal::KernelCacheStats stats = internal::GetKernelCacheStats();
  const char* cap_env = std::getenv("W4JIT_KERNEL_CACHE_CAPACITY");
  std::printf(
      "kernel cache   %lld kernels of at most %lld (least recently used "
      "dropped beyond; W4JIT_KERNEL_CACHE_CAPACITY=%s), %lld evicted, %.3f "
      "ms JIT in total\n",
      static_cast<long long>(stats.entries),
      static_cast<long long>(stats.capacity),
      cap_env != nullptr && *cap_env ? cap_env : "(unset)",
      static_cast<long long>(stats.evictions), stats.total_generation_ms);
  return 0;
}

}  // namespace w4jit::tools
