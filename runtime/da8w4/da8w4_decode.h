// Decodes packed DA8W4 weight blocks (runtime/da8w4/da8w4_pack.h) into the byte
// layout the large-M kernels read (Da8w4GemmConfig::decoded): per block and
// k-quad, the low nibbles of the packed vector as one vector of bytes, then
// the high nibbles as another. Done once per (thread, column panel) so the
// GEMM's inner loop is loads and dot products only. The layer runs the JIT
// decoder (jit/da8w4_decode_generator.h); this portable version is the
// reference the tests hold it to.
#ifndef W4JIT_RUNTIME_DA8W4_DA8W4_DECODE_H_
#define W4JIT_RUNTIME_DA8W4_DA8W4_DECODE_H_

#include <cstdint>

#include "runtime/da8w4/da8w4_pack.h"

namespace w4jit::internal {

// Blocks [b0, b1) of `packed` into dst, which holds
// (b1 - b0) * layout.decoded_block_bytes() bytes.
void DecodeDa8w4Blocks(const Da8w4Packed& packed, int64_t b0, int64_t b1,
                       uint8_t* dst);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_DA8W4_DA8W4_DECODE_H_
