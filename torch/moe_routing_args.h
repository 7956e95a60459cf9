// The routing arguments of a MoE call from torch (fused_moe, w4jit.MoE):
// topk ids [T, k] int32 or int64 and routing weights [T, k] of any float
// dtype, checked and converted to what MoeLayer::Run reads.
#ifndef W4JIT_TORCH_MOE_ROUTING_ARGS_H_
#define W4JIT_TORCH_MOE_ROUTING_ARGS_H_

#include <ATen/ATen.h>

#include <cstdint>

namespace w4jit::torch_ext {

struct RoutingTensors {
  at::Tensor ids;      // int32 [T, k], contiguous
  at::Tensor weights;  // f32 [T, k], contiguous; undefined if not given
  int64_t k = 0;
};

// ids_name: the ids argument's name in the caller's signature. `weights`
// null: unweighted (not read). int64 ids are narrowed to int32
// after checking that each is an expert id in [0, experts) (MoeLayer::Run
// checks int32 ones), so a large id cannot wrap onto a valid one. Errors
// are c10::Errors naming the op, the argument and the value.
RoutingTensors CheckRouting(const char* op, const char* ids_name,
                            const at::Tensor& topk_ids,
                            const at::Tensor* weights, int64_t t,
                            int64_t experts);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_MOE_ROUTING_ARGS_H_
