// torch's CPU int4pack byte layouts (torch._convert_weight_to_int4pack_for_
// cpu; runtime/formats/tinygemm_int4pack.cc describes them), for callers
// that unpack weights outside a layer (the torch op
// woq_repack_from_int4pack) and for tests.
#ifndef W4JIT_RUNTIME_FORMATS_TINYGEMM_INT4PACK_H_
#define W4JIT_RUNTIME_FORMATS_TINYGEMM_INT4PACK_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace w4jit::internal {

// Which of torch's packers wrote the bytes: torch packs for the capability
// its own CPU kernels run at (at::native::get_cpu_capability(), which the
// ATEN_CPU_CAPABILITY environment variable overrides). The value is the
// row count of a full block.
enum class Int4PackBlocking : int {
  // "AVX512": 64-row blocks, per k 32 bytes, byte j = row j | row j+32 << 4.
  kAvx512 = 64,
  // "AVX2": 32-row blocks, per k 16 bytes, byte j = row j | row j+16 << 4.
  kAvx2 = 32,
  // "DEFAULT" (no vector kernels): 32-row blocks of adjacent pairs, per k
  // 16 bytes, byte j = row 2j | row 2j+1 << 4.
  kDefault = 0,
};

// Rows per block: 64, 32, or 32 for kDefault.
int64_t BlockRows(Int4PackBlocking blocking);

// The blocking torch's packer uses at `capability`, as torch names it
// (torch.backends.cpu.get_cpu_capability(): "AVX512", "AVX2", "DEFAULT";
// ATEN_CPU_CAPABILITY's lower-case "avx512", "avx2", "default" too).
// InvalidArgument naming any other value (e.g. "SVE256", which has no
// int4pack layout w4jit reads).
absl::StatusOr<Int4PackBlocking> Int4PackBlockingFor(
    std::string_view capability);

// InvalidArgument unless N is a positive multiple of 16 and K a positive
// even number (what torch's packer accepts).
absl::Status CheckInt4PackShape(int64_t n, int64_t k);

// Byte offset in the uint8 [N, K/2] tensor and nibble (0 low, 1 high) of
// element (row n, column k). Valid for shapes CheckInt4PackShape accepts.
struct Int4PackPlace {
  int64_t byte;
  int nibble;
};
Int4PackPlace Int4PackPlaceOf(Int4PackBlocking blocking, int64_t n_total,
                              int64_t k_total, int64_t n, int64_t k);

// uint8 [N, K/2] int4pack bytes -> u[n * K + k] in [0, 15], and back
// (packed sized N * K / 2 by the caller). Shapes as CheckInt4PackShape.
void UnpackTinygemmInt4Pack(const uint8_t* packed, int64_t n, int64_t k,
                            Int4PackBlocking blocking, uint8_t* u);
void PackTinygemmInt4Pack(const uint8_t* u, int64_t n, int64_t k,
                          Int4PackBlocking blocking, uint8_t* packed);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_FORMATS_TINYGEMM_INT4PACK_H_
