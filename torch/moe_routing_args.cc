#include "torch/moe_routing_args.h"

#include <c10/util/Exception.h>

#include "torch/tensor_checks.h"

namespace w4jit::torch_ext {

RoutingTensors CheckRouting(const char* op, const char* ids_name,
                            const at::Tensor& topk_ids,
                            const at::Tensor* weights, int64_t t,
                            int64_t experts) {
  CheckCpu(op, ids_name, topk_ids);
  CheckDim(op, ids_name, topk_ids, 2);
  CheckSize(op, ids_name, topk_ids, 0, t, "T, from the input");
  CheckDType(op, ids_name, topk_ids, {at::kInt, at::kLong});
  RoutingTensors r;
  r.k = topk_ids.size(1);
  if (topk_ids.scalar_type() == at::kLong && topk_ids.numel() > 0) {
    const at::Tensor bad = (topk_ids < 0).logical_or(topk_ids >= experts);
    if (bad.any().item<bool>()) {
      const at::Tensor at = bad.nonzero()[0];
      const int64_t i = at[0].item<int64_t>(), j = at[1].item<int64_t>();
      TORCH_CHECK(false, op, ": ", ids_name, "[", i, ", ", j,
                  "] = ", topk_ids[i][j].item<int64_t>(),
                  " is not an expert id in [0, ", experts, ")");
    }
  }
  r.ids = topk_ids.to(at::kInt).contiguous();
  if (weights != nullptr) {
    CheckCpu(op, "topk_weights", *weights);
    CheckDim(op, "topk_weights", *weights, 2);
    CheckSize(op, "topk_weights", *weights, 0, t, "T, from the input");
    CheckSize(op, "topk_weights", *weights, 1, r.k, "k, from the ids");
    CheckDType(op, "topk_weights", *weights,
               {at::kFloat, at::kBFloat16, at::kHalf, at::kDouble});
    r.weights = weights->to(at::kFloat).contiguous();
  }
  return r;
}

}  // namespace w4jit::torch_ext
