// torchao's int4 weight-only ("tinygemm") checkpoints through the zentorch
// ops: woq_repack_from_int4pack (zentorch_woq_repack_from_int4pack).
#ifndef W4JIT_TORCH_INT4PACK_OPS_H_
#define W4JIT_TORCH_INT4PACK_OPS_H_

#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>

namespace w4jit::torch_ext {

// uint8 [N, K/2] in torch's CPU int4pack layout (what
// torch._convert_weight_to_int4pack_for_cpu(w int32 [N, K], inner_k_tiles)
// returns; N a multiple of 16, K even) -> int32 [N, K/8], the same as
// WoqRepackWeight of the unpacked values u in [0, 15]. torch packs for its
// CPU kernels' capability, so the bytes are read as TorchCpuCapability()
// says (runtime/formats/tinygemm_int4pack.cc has the three layouts). With
// float zero points z [G, N] and scales s [G, N], woq_linear then computes
// w = (u - 8) * s + z, torchao's dequantization.
at::Tensor WoqRepackFromInt4Pack(const at::Tensor& packed_weight);

// torch's CPU kernel capability ("AVX512", "AVX2", "DEFAULT", or another
// name on other CPUs): at::get_cpu_capability() on torch 2.1 and later
// (ATEN_CPU_CAPABILITY overrides it there); on older torch, which cannot
// be asked (and has no int4pack packer), torch's rule applied here.
std::string TorchCpuCapability();

// Defines woq_repack_from_int4pack in TORCH_LIBRARY(w4jit, m).
void RegisterInt4PackOps(torch::Library& m);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_INT4PACK_OPS_H_
