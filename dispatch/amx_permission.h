// Linux hands out AMX tile data per process: until the process asks
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), its first tile
// instruction faults (SIGILL), because the kernel only then agrees to
// save the 8 KB of tile state at each context switch. The library asks
// here, once per process, when it detects the CPU (HostCpu(): a refusal
// keeps the tier below kAmx, with one log line); the bench's AMX peak
// loops ask through the same function.
#ifndef W4JIT_DISPATCH_AMX_PERMISSION_H_
#define W4JIT_DISPATCH_AMX_PERMISSION_H_

#include "absl/status/status.h"

namespace w4jit::internal {

// OK once this process may run tile instructions: the CPU has AMX-TILE,
// the OS saves the tile state (XCR0 bits 17-18) and Linux granted the
// tile data permission to the process (its threads included). The request
// is made on the first call (thread-safe: a function-local static); later
// calls return its outcome. Otherwise FailedPrecondition with the reason
// ("CPU lacks AMX_TILE", "Linux refused AMX tile data: ..."). Reads CPUID
// itself, so HostCpu() may call it while it detects.
absl::Status RequestAmxTileData();

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_AMX_PERMISSION_H_
