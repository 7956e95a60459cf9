// torch.ops.w4jit.fused_moe: zentorch's / vLLM's CPU fused-MoE argument
// list over w4jit::MoeLayer, for stacked repacked int4 experts.
#ifndef W4JIT_TORCH_MOE_OPS_H_
#define W4JIT_TORCH_MOE_OPS_H_

#include <torch/library.h>

namespace w4jit::torch_ext {

void RegisterMoeOps(torch::Library& m);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_MOE_OPS_H_
