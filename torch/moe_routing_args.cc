#include "torch/moe_routing_args.h"

#include <c10/util/Exception.h>

#include <string>

#include "torch/arg_names.h"
#include "torch/tensor_checks.h"

namespace w4jit::torch_ext {

RoutingTensors CheckRouting(const char* op, const char* ids_name,
                            const at::Tensor& topk_ids,
                            const at::Tensor* weights, int64_t t,
                            int64_t experts, NonFinitePolicy non_finite) {
  CheckCpu(op, ids_name, topk_ids);
  CheckDim(op, ids_name, topk_ids, 2);
  CheckSize(op, ids_name, topk_ids, 0, t, "T, from the input");
  CheckDType(op, ids_name, topk_ids, {at::kInt, at::kLong});
  RoutingTensors r;
  r.k = topk_ids.size(1);
  if (topk_ids.scalar_type() == at::kLong && topk_ids.numel() > 0) {
    const at::Tensor bad = (topk_ids < 0).logical_or(topk_ids >= experts);
    const bool any_bad = bad.any().item<bool>();
    if (any_bad && non_finite == NonFinitePolicy::kPropagate) {
      r.ids = topk_ids.masked_fill(bad, -1).to(at::kInt).contiguous();
    } else if (any_bad) {
      const at::Tensor at = bad.nonzero()[0];
      const int64_t i = at[0].item<int64_t>(), j = at[1].item<int64_t>();
      TORCH_CHECK(false, op, ": ", ids_name, "[", i, ", ", j,
                  "] = ", topk_ids[i][j].item<int64_t>(),
                  " is not an expert id in [0, ", experts, ")");
    }
  }
  if (!r.ids.defined()) r.ids = topk_ids.to(at::kInt).contiguous();
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

Activation ParseMoeActivation(const char* op, const char* arg,
                              c10::string_view act) {
  if (act == "swigluoai") return Activation::kSwigluOai;
  if (act == "silu" || act == "gelu" || act == "gelu_erf" ||
      act == "gelu_tanh") {
    return ParseGateActivation(op, arg, act);
  }
  TORCH_CHECK(false, op, ": ", arg, " = '", std::string(act),
              "' is not silu, gelu, gelu_tanh or swigluoai");
  return Activation::kNone;  // not reached
}

Mode ResolveMoeMode(const char* op, c10::string_view mode, DType act_dtype,
                    WeightType weight_type) {
  if (mode != "auto") return ParseMode(op, mode);
  return act_dtype == DType::kBF16 && weight_type == WeightType::kS4
             ? Mode::kDA8W4
             : Mode::kW4A16;
}

int64_t PackedK(const char* op, const char* name, const at::Tensor& w) {
  CheckCpu(op, name, w);
  CheckDim(op, name, w, 3);
  CheckDType(op, name, w, {at::kInt, at::kChar, at::kByte});
  return w.size(2) * (w.scalar_type() == at::kInt ? 8 : 2);
}

}  // namespace w4jit::torch_ext
