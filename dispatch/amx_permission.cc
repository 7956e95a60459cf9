#include "dispatch/amx_permission.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "dispatch/cpuid_features.h"

namespace w4jit::internal {
namespace {

// From <asm/prctl.h> and the kernel's xstate numbering; spelled out so
// that the build does not depend on the headers being new enough.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;
constexpr uint64_t kXcr0TileBits = (uint64_t{1} << 17) | (uint64_t{1} << 18);

absl::Status Request() {
  if (!FeaturesFromCpuid(HostCpuidWords()).amx_tile) {
    return absl::FailedPreconditionError(
        "CPU lacks AMX_TILE (or the OS does not save the tile state)");
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
    const int err = errno;
    return absl::FailedPreconditionError(absl::StrCat(
        "Linux refused AMX tile data: arch_prctl(ARCH_REQ_XCOMP_PERM, 18) "
        "failed with ",
        std::strerror(err),
        err == EINVAL ? " (a kernel before 5.16 has no such request)" : ""));
  }
  uint64_t permitted = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &permitted) != 0 ||
      ((permitted >> kXfeatureXtiledata) & 1u) == 0) {
    return absl::FailedPreconditionError(
        "Linux did not grant AMX tile data: ARCH_GET_XCOMP_PERM lacks "
        "XTILEDATA after the request");
  }
  // Asked again after the request: the state the OS saves is what counts.
  if ((HostCpuidWords().xcr0 & kXcr0TileBits) != kXcr0TileBits) {
    return absl::FailedPreconditionError(
        "the OS does not save the AMX tile state (XCR0 bits 17-18 clear)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RequestAmxTileData() {
  static const absl::Status* const outcome = new absl::Status(Request());
  return *outcome;
}

}  // namespace w4jit::internal
