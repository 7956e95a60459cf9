// The MoE part of the C API: a thin shell over w4jit::MoeLayer.
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "runtime/c_api/c_api_status.h"
#include "w4jit/moe.hpp"
#include "w4jit/w4jit.h"

struct w4jit_moe {
  std::unique_ptr<w4jit::MoeLayer> impl;
};

namespace {

using w4jit::internal::CApiFail;
using w4jit::internal::CApiFromStatus;
using w4jit::internal::RawEnum;

w4jit::MoeDesc ToCpp(const w4jit_moe_desc& d) {
  w4jit::MoeDesc out;
  out.experts = d.experts;
  out.hidden = d.hidden;
  out.intermediate = d.intermediate;
  out.group_size = d.group_size;
  out.weight_type = static_cast<w4jit::WeightType>(RawEnum(d.weight_type));
  out.scale_dtype = static_cast<w4jit::DType>(RawEnum(d.scale_dtype));
  out.act_dtype = static_cast<w4jit::DType>(RawEnum(d.act_dtype));
  out.out_dtype = static_cast<w4jit::DType>(RawEnum(d.out_dtype));
  out.mode = static_cast<w4jit::Mode>(RawEnum(d.mode));
  out.activation = static_cast<w4jit::Activation>(RawEnum(d.activation));
  out.has_w13_bias = d.has_w13_bias != 0;
  out.has_w2_bias = d.has_w2_bias != 0;
  out.bias_dtype = static_cast<w4jit::DType>(RawEnum(d.bias_dtype));
  out.allow_bf16_compute = d.allow_bf16_compute != 0;
  out.act_quant = static_cast<w4jit::ActQuant>(RawEnum(d.act_quant));
  out.swiglu_alpha = d.swiglu_alpha;
  out.swiglu_limit = d.swiglu_limit;
  out.non_finite = static_cast<w4jit::NonFinitePolicy>(RawEnum(d.non_finite));
  return out;
}

w4jit::ExpertStrides ToCpp(const w4jit_expert_strides& s) {
  return {s.qweight, s.scales, s.zero_points, s.bias, s.g_idx};
}

w4jit_status Create(const w4jit_moe_desc* desc,
                    const std::function<w4jit::MoeWeights()>& weights,
                    w4jit_moe** out_moe) {
  if (out_moe == nullptr)
    return CApiFail(W4JIT_INVALID_ARGUMENT, "out_moe is null");
  *out_moe = nullptr;
  if (desc == nullptr) return CApiFail(W4JIT_INVALID_ARGUMENT, "desc is null");
  try {
    auto moe = w4jit::MoeLayer::Create(ToCpp(*desc), weights());
    if (!moe.ok()) return CApiFromStatus(moe.status());
    *out_moe = new w4jit_moe{*std::move(moe)};
    return CApiFromStatus(absl::OkStatus());
  } catch (const std::bad_alloc&) {
    return CApiFail(W4JIT_RESOURCE_EXHAUSTED,
                    "out of memory creating the MoE layer");
  } catch (const std::exception& e) {
    return CApiFail(W4JIT_INTERNAL, e.what());
  }
}

}  // namespace

extern "C" {

void w4jit_moe_desc_init(w4jit_moe_desc* desc) {
  if (desc == nullptr) return;
  const w4jit::MoeDesc d;
  desc->experts = d.experts;
  desc->hidden = d.hidden;
  desc->intermediate = d.intermediate;
  desc->group_size = d.group_size;
  desc->weight_type = static_cast<w4jit_weight_type>(d.weight_type);
  desc->scale_dtype = static_cast<w4jit_dtype>(d.scale_dtype);
  desc->act_dtype = static_cast<w4jit_dtype>(d.act_dtype);
  desc->out_dtype = static_cast<w4jit_dtype>(d.out_dtype);
  desc->mode = static_cast<w4jit_mode>(d.mode);
  desc->activation = static_cast<w4jit_activation>(d.activation);
  desc->has_w13_bias = d.has_w13_bias ? 1 : 0;
  desc->has_w2_bias = d.has_w2_bias ? 1 : 0;
  desc->bias_dtype = static_cast<w4jit_dtype>(d.bias_dtype);
  desc->allow_bf16_compute = d.allow_bf16_compute ? 1 : 0;
  desc->act_quant = static_cast<w4jit_act_quant>(d.act_quant);
  desc->swiglu_alpha = d.swiglu_alpha;
  desc->swiglu_limit = d.swiglu_limit;
  desc->non_finite = static_cast<w4jit_non_finite>(d.non_finite);
}

w4jit_status w4jit_moe_create(const w4jit_moe_desc* desc,
                              const w4jit_weights* w13,
                              const w4jit_expert_strides* w13_strides,
                              const w4jit_weights* w2,
                              const w4jit_expert_strides* w2_strides,
                              w4jit_moe** out_moe) {
  if (w13 == nullptr || w2 == nullptr || w13_strides == nullptr ||
      w2_strides == nullptr) {
    if (out_moe != nullptr) *out_moe = nullptr;
    return CApiFail(W4JIT_INVALID_ARGUMENT,
                    "w13, w2 or one of their strides is null");
  }
  return Create(
      desc,
      [&] {
        const int64_t e = desc->experts;
        return w4jit::MoeWeights{
            w4jit::StackedExperts(w4jit::internal::ToCppWeights(*w13),
                                  ToCpp(*w13_strides), e),
            w4jit::StackedExperts(w4jit::internal::ToCppWeights(*w2),
                                  ToCpp(*w2_strides), e)};
      },
      out_moe);
}

w4jit_status w4jit_moe_create_per_expert(const w4jit_moe_desc* desc,
                                         const w4jit_weights* w13,
                                         const w4jit_weights* w2,
                                         w4jit_moe** out_moe) {
  if (w13 == nullptr || w2 == nullptr) {
    if (out_moe != nullptr) *out_moe = nullptr;
    return CApiFail(W4JIT_INVALID_ARGUMENT, "w13 or w2 is null");
  }
  return Create(
      desc,
      [&] {
        w4jit::MoeWeights w;
        for (int64_t e = 0; e < desc->experts; ++e) {
          w.w13.push_back(w4jit::internal::ToCppWeights(w13[e]));
          w.w2.push_back(w4jit::internal::ToCppWeights(w2[e]));
        }
        return w;
      },
      out_moe);
}

w4jit_status w4jit_moe_run(const w4jit_moe* moe, int64_t t, const void* x,
                           int64_t ldx, const int32_t* topk_ids,
                           const float* topk_weights, int64_t k, void* y,
                           int64_t ldy, int flags) {
  if (moe == nullptr) return CApiFail(W4JIT_INVALID_ARGUMENT, "moe is null");
  if ((flags & ~(W4JIT_MOE_ACCUMULATE | W4JIT_MOE_UNWEIGHTED)) != 0) {
    return CApiFail(W4JIT_INVALID_ARGUMENT,
                    "flags = " + std::to_string(flags) +
                        " has bits other than W4JIT_MOE_ACCUMULATE (1) and "
                        "W4JIT_MOE_UNWEIGHTED (2)");
  }
  w4jit::MoeRunOptions options;
  options.accumulate = (flags & W4JIT_MOE_ACCUMULATE) != 0;
  options.unweighted = (flags & W4JIT_MOE_UNWEIGHTED) != 0;
  try {
    return CApiFromStatus(
        moe->impl->Run(t, x, ldx, topk_ids, topk_weights, k, y, ldy, options));
  } catch (const std::bad_alloc&) {
    return CApiFail(W4JIT_RESOURCE_EXHAUSTED,
                    "out of memory running the MoE layer");
  } catch (const std::exception& e) {
    return CApiFail(W4JIT_INTERNAL, e.what());
  }
}

w4jit_status w4jit_moe_packed_bytes(const w4jit_moe* moe, size_t* out_bytes) {
  if (moe == nullptr) return CApiFail(W4JIT_INVALID_ARGUMENT, "moe is null");
  if (out_bytes == nullptr) {
    return CApiFail(W4JIT_INVALID_ARGUMENT, "out_bytes is null");
  }
  *out_bytes = moe->impl->packed_bytes();
  return W4JIT_OK;
}

void w4jit_moe_destroy(w4jit_moe* moe) { delete moe; }

}  // extern "C"
