// torch's CPU int4pack byte layout (runtime/formats/tinygemm_int4pack.cc
// describes it), for callers that unpack weights outside a layer (the
// torch op woq_repack_from_int4pack).
#ifndef W4JIT_RUNTIME_FORMATS_TINYGEMM_INT4PACK_H_
#define W4JIT_RUNTIME_FORMATS_TINYGEMM_INT4PACK_H_

#include <cstdint>

namespace w4jit::internal {

// uint8 [N, K/2] int4pack bytes -> u[n * K + k] in [0, 15]. N a multiple
// of 64 and K even (the caller checks).
void UnpackTinygemmInt4Pack(const uint8_t* packed, int64_t n, int64_t k,
                            uint8_t* u);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_FORMATS_TINYGEMM_INT4PACK_H_
