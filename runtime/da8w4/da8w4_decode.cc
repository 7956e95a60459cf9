#include "runtime/da8w4/da8w4_decode.h"

#include <cstring>

namespace w4jit::internal {
namespace {

// 32 bytes at a time with the compiler's generic vectors (two SSE2 ops each
// on the baseline target): the library has no per-ISA C++ builds.
using Bytes32 = uint8_t __attribute__((vector_size(32)));

}  // namespace

void DecodeDa8w4Blocks(const Da8w4Packed& packed, int64_t b0, int64_t b1,
                       uint8_t* dst) {
  const Da8w4Layout& lay = packed.layout;
  const int qb = lay.quad_bytes();  // 32 or 64: whole Bytes32 vectors
  const int64_t quads = (b1 - b0) * lay.k_quads();
  const uint8_t* src = packed.weights.data() + b0 * lay.block_weight_bytes();
  const Bytes32 zero = {};
  const Bytes32 low = zero | 0x0F;
  for (int64_t q = 0; q < quads; ++q) {
    for (int i = 0; i < qb; i += 32) {
      Bytes32 v;
      std::memcpy(&v, src + i, 32);
      const Bytes32 lo = v & low;
      const Bytes32 hi = v >> 4;
      std::memcpy(dst + i, &lo, 32);
      std::memcpy(dst + qb + i, &hi, 32);
    }
    src += qb;
    dst += 2 * qb;
  }
}

}  // namespace w4jit::internal
