// Linux hands out AMX tile data per process: until the process asks
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), its first tile
// instruction faults (SIGILL), because the kernel only then agrees to
// save the 8 KB of tile state at each context switch. The AMX peak loops
// ask here once before they are timed.
#ifndef W4JIT_PERF_LIB_CEILINGS_AMX_PERMISSION_H_
#define W4JIT_PERF_LIB_CEILINGS_AMX_PERMISSION_H_

#include "absl/status/status.h"

namespace w4jit::perf {

// OK once this process may run tile instructions: the CPU has AMX-TILE,
// the OS saves the tile state (XCR0 bits 17-18) and Linux granted the
// tile data permission to the process (its threads included). The request
// is made on the first call; later calls return its outcome. Otherwise
// FailedPrecondition with the reason ("CPU lacks AMX_TILE", "Linux refused
// AMX tile data: ...").
absl::Status RequestAmxTileData();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CEILINGS_AMX_PERMISSION_H_
