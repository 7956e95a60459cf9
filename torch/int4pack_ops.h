// torchao's int4 weight-only ("tinygemm") checkpoints through the zentorch
// ops: woq_repack_from_int4pack (zentorch_woq_repack_from_int4pack).
#ifndef W4JIT_TORCH_INT4PACK_OPS_H_
#define W4JIT_TORCH_INT4PACK_OPS_H_

#include <ATen/ATen.h>
#include <torch/library.h>

namespace w4jit::torch_ext {

// uint8 [N, K/2] in torch's CPU int4pack layout (what
// torch._convert_weight_to_int4pack_for_cpu(w int32 [N, K], inner_k_tiles)
// returns on an AVX-512 CPU; N a multiple of 64) -> int32 [N, K/8], the
// same as WoqRepackWeight of the unpacked values u in [0, 15]. With
// float zero points z [G, N] and scales s [G, N], woq_linear then computes
// w = (u - 8) * s + z, torchao's dequantization.
at::Tensor WoqRepackFromInt4Pack(const at::Tensor& packed_weight);

// Defines woq_repack_from_int4pack in TORCH_LIBRARY(w4jit, m).
void RegisterInt4PackOps(torch::Library& m);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_INT4PACK_OPS_H_
