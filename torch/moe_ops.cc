// fused_moe(Tensor(a!) output, Tensor input, Tensor w13, Tensor w2,
//           Tensor? w13_bias, Tensor? w2_bias, Tensor topk_weights,
//           Tensor topk_id, bool skip_weighted, str act,
//           Tensor? w13_scales, Tensor? w2_scales, *,
//           Tensor? w13_zero_points, Tensor? w2_zero_points,
//           str mode, str act_quant, float swiglu_alpha,
//           float swiglu_limit, str non_finite, str zentorch_op_name) -> ()
//
// The positional part is zentorch_fused_moe's, so that vLLM's call works
// with the op's namespace replaced; everything after * is ours.
//
// w13 int32 [E, 2I, H/8] and w2 int32 [E, H, I/8]: each expert's weights
// as woq_repack_weight makes them (zentorch's repacked layout), stacked,
// or the same bytes as int8 [E, 2I, H/2] and [E, H, I/2] (k even in the
// low nibble); scales [E, G, N] (f32, bf16 or f16), zero points int8
// [E, G, N] (u4, both or neither), biases [E, 2I] and [E, H] (any float
// dtype, widened to f32: exact for bf16). input [T, H] bf16 or f32;
// topk_id [T, k] int32 (int64 is narrowed), topk_weights [T, k] (any float
// dtype, widened to f32; not read with skip_weighted). act: "silu",
// "gelu" (erf), "gelu_tanh" or "swigluoai" (gpt-oss: w13's rows
// interleaved gate, up, gate, up, ...; swiglu_alpha and swiglu_limit its
// constants, gpt-oss's by default). mode: "auto" (default: zentorch's
// rule, ResolveMoeMode: DA8W4 for s4 weights and bf16 input, else W4A16),
// "w4a16" or "da8w4"; act_quant (da8w4 only, as dynamic_qlinear's):
// "per_token" (zentorch's) or "per_group" activation scales for x and the
// intermediate. non_finite: "error" (default: a non-finite routing weight,
// NaN / Inf in input or an id outside [0, E) raises, naming it) or
// "propagate" (that token's row of output is NaN, the others computed;
// MoeDesc::non_finite).
//
// `output` [T, H] (input's dtype) is OVERWRITTEN with the result: zentorch
// requires a zero-initialised output and accumulates into it, which gives
// the same values for the zeros it requires.
//
// The MoeLayer is built on the first call and cached on the identity and
// version of the weight tensors (TensorKey, torch/layer_cache.h).
//
// fused_moe_functional(input, ...the same arguments...) -> Tensor returns
// the result in a new tensor instead; fused_moe's Functionalize kernel
// (torch.compile, torch.export) calls it, never an eager call.
#include "torch/moe_ops.h"

#include <ATen/ATen.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "torch/arg_names.h"
#include "torch/layer_cache.h"
#include "torch/moe_routing_args.h"
#include "torch/tensor_checks.h"
#include "w4jit/moe.hpp"

namespace w4jit::torch_ext {
namespace {

using OptTensor = c10::optional<at::Tensor>;

void CheckStacked(const char* op, const char* name, const at::Tensor& t,
                  int64_t e, int64_t rows, int64_t cols,
                  std::initializer_list<at::ScalarType> dtypes,
                  const char* why) {
  CheckCpu(op, name, t);
  CheckDim(op, name, t, 3);
  CheckDType(op, name, t, dtypes);
  CheckSize(op, name, t, 0, e, "experts, from w13");
  CheckSize(op, name, t, 1, rows, why);
  CheckSize(op, name, t, 2, cols, why);
  TORCH_CHECK(t.is_contiguous(), op, ": ", name, " must be contiguous");
}

// Expert 0's view of stacked [E, ...] tensors and the byte strides.
WeightsView View(const at::Tensor& q, const at::Tensor& s, const at::Tensor* zp,
                 const at::Tensor* bias, ExpertStrides* st) {
  WeightsView v;
  v.format = WeightFormat::kZentorchInt32;
  v.groups_major = true;
  v.qweight = q.data_ptr();
  v.scales = s.data_ptr();
  st->qweight = q.stride(0) * q.element_size();
  st->scales = s.stride(0) * s.element_size();
  if (zp != nullptr) {
    v.zero_points = zp->data_ptr();
    st->zero_points = zp->stride(0) * zp->element_size();
  }
  if (bias != nullptr) {
    v.bias = bias->data_ptr();
    st->bias = bias->stride(0) * bias->element_size();
  }
  return v;
}

void FusedMoe(at::Tensor& output, const at::Tensor& input,
              const at::Tensor& w13, const at::Tensor& w2,
              const OptTensor& w13_bias, const OptTensor& w2_bias,
              const at::Tensor& topk_weights, const at::Tensor& topk_id,
              bool skip_weighted, c10::string_view act,
              const OptTensor& w13_scales, const OptTensor& w2_scales,
              const OptTensor& w13_zero_points, const OptTensor& w2_zero_points,
              c10::string_view mode_name, c10::string_view act_quant_name,
              double swiglu_alpha, double swiglu_limit,
              c10::string_view non_finite_name, c10::string_view op_name) {
  const std::string op_str(op_name);
  const char* op = op_str.c_str();
  const Activation activation = ParseMoeActivation(op, "act", act);
  // per_group with W4A16 is refused by MoeLayer::Create (the desc checks).
  const ActQuant act_quant = ParseActQuant(op, act_quant_name);
  const NonFinitePolicy non_finite = ParseNonFinite(op, non_finite_name);
  CheckCpu(op, "input", input);
  CheckDim(op, "input", input, 2);
  CheckDType(op, "input", input, {at::kFloat, at::kBFloat16});
  const int64_t h13 = PackedK(op, "w13", w13);
  const int64_t t = input.size(0), hidden = input.size(1);
  const int64_t experts = w13.size(0);
  TORCH_CHECK(w13.size(1) % 2 == 0, op, ": w13 has shape ", ShapeString(w13),
              ": dim 1 (2I, gate and up rows) must be even");
  const int64_t inter = w13.size(1) / 2;
  const char* w13_why = w13.scalar_type() == at::kInt
                            ? "[E, 2I, H / 8] int32, H from input"
                            : "[E, 2I, H / 2] int8, H from input";
  TORCH_CHECK(h13 == hidden, op, ": w13 has shape ", ShapeString(w13),
              ": it holds K = ", h13, " columns per row, want ", w13_why,
              " (H = ", hidden, ")");
  TORCH_CHECK(hidden % 8 == 0 && inter % 8 == 0, op, ": H = ", hidden,
              " and I = ", inter,
              " must be multiples of 8 (zentorch's int32 words)");
  const int64_t i2 = PackedK(op, "w2", w2);
  CheckStacked(op, "w13", w13, experts, 2 * inter, w13.size(2),
               {w13.scalar_type()}, w13_why);
  const char* w2_why = w2.scalar_type() == at::kInt
                           ? "[E, H, I / 8] int32, I from w13"
                           : "[E, H, I / 2] int8, I from w13";
  TORCH_CHECK(i2 == inter, op, ": w2 has shape ", ShapeString(w2),
              ": it holds K = ", i2, " columns per row, want ", w2_why,
              " (I = ", inter, ")");
  CheckStacked(op, "w2", w2, experts, hidden, w2.size(2), {w2.scalar_type()},
               w2_why);
  TORCH_CHECK(w13_scales.has_value() && w2_scales.has_value(), op,
              ": w13_scales and w2_scales are required (int4 experts)");
  const at::Tensor& s13 = *w13_scales;
  const at::Tensor& s2 = *w2_scales;
  CheckCpu(op, "w13_scales", s13);
  CheckDim(op, "w13_scales", s13, 3);
  CheckDim(op, "w2_scales", s2, 3);
  const int64_t g13 = s13.size(1), g2 = s2.size(1);
  // One group size for both, or per-channel (one group over each K).
  const bool per_channel = g13 == 1 && g2 == 1;
  TORCH_CHECK(g13 > 0 && g2 > 0 && hidden % g13 == 0 && inter % g2 == 0 &&
                  (per_channel || hidden / g13 == inter / g2),
              op, ": w13_scales ", ShapeString(s13), " and w2_scales ",
              ShapeString(s2),
              " must give both projections one group size (H / G13 == I / "
              "G2) or both one group (per-channel), H = ",
              hidden, ", I = ", inter);
  const auto float_types = {at::kFloat, at::kBFloat16, at::kHalf};
  CheckStacked(op, "w13_scales", s13, experts, g13, 2 * inter, float_types,
               "[E, G, 2I]");
  CheckStacked(op, "w2_scales", s2, experts, g2, hidden, float_types,
               "[E, G, H]");
  TORCH_CHECK(s13.scalar_type() == s2.scalar_type(), op,
              ": w13_scales and w2_scales must have one dtype");
  TORCH_CHECK(w13_zero_points.has_value() == w2_zero_points.has_value(), op,
              ": give zero points for both projections (u4) or neither (s4)");
  const bool u4 = w13_zero_points.has_value();
  const Mode mode = ResolveMoeMode(op, mode_name, ToDType(input.scalar_type()),
                                   u4 ? WeightType::kU4 : WeightType::kS4);
  if (u4) {
    CheckStacked(op, "w13_zero_points", *w13_zero_points, experts, g13,
                 2 * inter, {at::kChar}, "[E, G, 2I]");
    CheckStacked(op, "w2_zero_points", *w2_zero_points, experts, g2, hidden,
                 {at::kChar}, "[E, G, H]");
  }
  if (w13_bias.has_value()) {
    CheckDim(op, "w13_bias", *w13_bias, 2);
    CheckSize(op, "w13_bias", *w13_bias, 0, experts, "experts");
    CheckSize(op, "w13_bias", *w13_bias, 1, 2 * inter, "2I");
  }
  if (w2_bias.has_value()) {
    CheckDim(op, "w2_bias", *w2_bias, 2);
    CheckSize(op, "w2_bias", *w2_bias, 0, experts, "experts");
    CheckSize(op, "w2_bias", *w2_bias, 1, hidden, "H");
  }
  CheckCpu(op, "output", output);
  TORCH_CHECK(output.sizes() == input.sizes() &&
                  output.scalar_type() == input.scalar_type(),
              op, ": output ", ShapeString(output), " ", output.scalar_type(),
              " must match input ", ShapeString(input), " ",
              input.scalar_type());
  TORCH_CHECK(input.stride(1) == 1 && output.stride(1) == 1, op,
              ": input and output rows must be contiguous");
  const RoutingTensors routing = CheckRouting(
      op, "topk_id", topk_id, skip_weighted ? nullptr : &topk_weights, t,
      experts, non_finite);
  MoeDesc d;
  d.experts = experts;
  d.hidden = hidden;
  d.intermediate = inter;
  // Not -1 for G13 = 1 alone: with I > H, w2 has I / H groups of H.
  d.group_size = per_channel ? -1 : hidden / g13;
  d.weight_type = u4 ? WeightType::kU4 : WeightType::kS4;
  d.scale_dtype = ToDType(s13.scalar_type());
  d.act_dtype = ToDType(input.scalar_type());
  d.out_dtype = d.act_dtype;
  d.mode = mode;
  d.activation = activation;
  d.swiglu_alpha = static_cast<float>(swiglu_alpha);
  d.swiglu_limit = static_cast<float>(swiglu_limit);
  d.act_quant = act_quant;
  d.has_w13_bias = w13_bias.has_value();
  d.has_w2_bias = w2_bias.has_value();
  d.bias_dtype = DType::kF32;
  // Everything of the desc the weight tensors do not fix.
  std::string signature = std::to_string(static_cast<int>(d.act_dtype)) + "/" +
                          std::to_string(static_cast<int>(d.mode)) + "/" +
                          std::string(act_quant_name) + "/" +
                          std::to_string(static_cast<int>(d.activation));
  if (d.activation == Activation::kSwigluOai) {
    // The constants' exact values (hex floats).
    char constants[64];
    std::snprintf(constants, sizeof constants, "/%a/%a", d.swiglu_alpha,
                  d.swiglu_limit);
    signature += constants;
  }
  auto layer = MoeCache::Global().GetOrBuild(
      signature,
      {w13, w2, s13, s2, w13_zero_points, w2_zero_points, w13_bias, w2_bias},
      [&] {
        // The biases in f32, converted here, once per layer (the layer
        // copies them), not on every call.
        at::Tensor b13, b2;
        if (w13_bias.has_value()) b13 = w13_bias->to(at::kFloat).contiguous();
        if (w2_bias.has_value()) b2 = w2_bias->to(at::kFloat).contiguous();
        ExpertStrides st13, st2;
        const WeightsView v13 = View(w13, s13, u4 ? &*w13_zero_points : nullptr,
                                     b13.defined() ? &b13 : nullptr, &st13);
        const WeightsView v2 = View(w2, s2, u4 ? &*w2_zero_points : nullptr,
                                    b2.defined() ? &b2 : nullptr, &st2);
        auto made = MoeLayer::Create(d, {StackedExperts(v13, st13, experts),
                                         StackedExperts(v2, st2, experts)});
        TORCH_CHECK(made.ok(), op, ": ", std::string(made.status().message()));
        return std::shared_ptr<const MoeLayer>(*std::move(made));
      });
  MoeRunOptions options;
  options.unweighted = skip_weighted;
  // Per call: the cached layer serves both policies.
  options.non_finite = non_finite;
  const absl::Status s = layer->Run(
      t, input.data_ptr(), input.stride(0), routing.ids.data_ptr<int32_t>(),
      skip_weighted ? nullptr : routing.weights.data_ptr<float>(), routing.k,
      output.data_ptr(), output.stride(0), options);
  TORCH_CHECK(s.ok(), op, ": ", std::string(s.message()));
}

// fused_moe_functional: fused_moe's arguments without `output`, returning
// the result in a new contiguous tensor (input's shape and dtype).
at::Tensor FusedMoeFunctional(
    const at::Tensor& input, const at::Tensor& w13, const at::Tensor& w2,
    const OptTensor& w13_bias, const OptTensor& w2_bias,
    const at::Tensor& topk_weights, const at::Tensor& topk_id,
    bool skip_weighted, c10::string_view act, const OptTensor& w13_scales,
    const OptTensor& w2_scales, const OptTensor& w13_zero_points,
    const OptTensor& w2_zero_points, c10::string_view mode_name,
    c10::string_view act_quant_name, double swiglu_alpha, double swiglu_limit,
    c10::string_view non_finite_name, c10::string_view op_name) {
  at::Tensor output = at::empty(input.sizes(), input.options());
  FusedMoe(output, input, w13, w2, w13_bias, w2_bias, topk_weights, topk_id,
           skip_weighted, act, w13_scales, w2_scales, w13_zero_points,
           w2_zero_points, mode_name, act_quant_name, swiglu_alpha,
           swiglu_limit, non_finite_name, op_name);
  return output;
}

// fused_moe's functionalization (torch.compile, torch.export, AOT
// autograd): output = fused_moe_functional(the other arguments). Without a
// Functionalize kernel torch would wrap the mutable op in its
// auto_functionalized higher-order op, whose Python implementations take a
// parameter named `mode` and so cannot be given fused_moe's `mode` keyword
// (TypeError: multiple values for argument 'mode'; docs/torch-2x.md). The
// result does not depend on output's old value (fused_moe overwrites it),
// so the functional graph reads none. Eager calls never come here
// (Functionalize is only in the key set of functional tensors).
void FusedMoeFunctionalize(
    at::Tensor& output, const at::Tensor& input, const at::Tensor& w13,
    const at::Tensor& w2, const OptTensor& w13_bias, const OptTensor& w2_bias,
    const at::Tensor& topk_weights, const at::Tensor& topk_id,
    bool skip_weighted, c10::string_view act, const OptTensor& w13_scales,
    const OptTensor& w2_scales, const OptTensor& w13_zero_points,
    const OptTensor& w2_zero_points, c10::string_view mode_name,
    c10::string_view act_quant_name, double swiglu_alpha, double swiglu_limit,
    c10::string_view non_finite_name, c10::string_view op_name) {
  namespace fz = at::functionalization::impl;
  const std::string op(op_name);
  auto unwrap = [](const at::Tensor& t) {
    if (!fz::isFunctionalTensor(t)) return t;
    fz::sync(t);
    return fz::from_functional_tensor(t);
  };
  auto unwrap_opt = [&](const OptTensor& t) -> OptTensor {
    if (!t.has_value()) return t;
    return unwrap(*t);
  };
  const bool any_functional =
      fz::isFunctionalTensor(input) || fz::isFunctionalTensor(w13) ||
      fz::isFunctionalTensor(w2) || fz::isFunctionalTensor(w13_bias) ||
      fz::isFunctionalTensor(w2_bias) || fz::isFunctionalTensor(topk_weights) ||
      fz::isFunctionalTensor(topk_id) || fz::isFunctionalTensor(w13_scales) ||
      fz::isFunctionalTensor(w2_scales) ||
      fz::isFunctionalTensor(w13_zero_points) ||
      fz::isFunctionalTensor(w2_zero_points);
  const at::Tensor x = unwrap(input);
  const at::Tensor q13 = unwrap(w13), q2 = unwrap(w2);
  const OptTensor b13 = unwrap_opt(w13_bias), b2 = unwrap_opt(w2_bias);
  const at::Tensor weights = unwrap(topk_weights), ids = unwrap(topk_id);
  const OptTensor s13 = unwrap_opt(w13_scales), s2 = unwrap_opt(w2_scales);
  const OptTensor z13 = unwrap_opt(w13_zero_points);
  const OptTensor z2 = unwrap_opt(w2_zero_points);
  // Below Functionalize from here on: the calls dispatch to the next keys
  // (the CPU kernel, or the fake and tracing modes under torch.compile).
  c10::impl::ExcludeDispatchKeyGuard skip(c10::DispatchKey::Functionalize);
  if (!fz::isFunctionalTensor(output)) {
    TORCH_CHECK(!any_functional, op,
                ": output is not a functional tensor but other arguments "
                "are (functionalization cannot write a plain tensor from "
                "functional ones)");
    static auto mutable_op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("w4jit::fused_moe", "")
            .typed<void(at::Tensor&, const at::Tensor&, const at::Tensor&,
                        const at::Tensor&, const OptTensor&, const OptTensor&,
                        const at::Tensor&, const at::Tensor&, bool,
                        c10::string_view, const OptTensor&, const OptTensor&,
                        const OptTensor&, const OptTensor&, c10::string_view,
                        c10::string_view, double, double, c10::string_view,
                        c10::string_view)>();
    mutable_op.call(output, x, q13, q2, b13, b2, weights, ids, skip_weighted,
                    act, s13, s2, z13, z2, mode_name, act_quant_name,
                    swiglu_alpha, swiglu_limit, non_finite_name, op_name);
    return;
  }
  // fused_moe's own check (its kernel no longer sees output): shape and
  // dtype of input, compared symbolically under dynamic shapes.
  TORCH_CHECK(output.dim() == input.dim() &&
                  output.scalar_type() == input.scalar_type(),
              op, ": output (", output.dim(), "-dim ", output.scalar_type(),
              ") must match input (", input.dim(), "-dim ", input.scalar_type(),
              ")");
  for (int64_t i = 0; i < input.dim(); ++i) {
    TORCH_CHECK(output.sym_sizes()[i] == input.sym_sizes()[i], op,
                ": output's dim ", i, " is ", output.sym_sizes()[i],
                " but input's is ", input.sym_sizes()[i]);
  }
  static auto functional_op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("w4jit::fused_moe_functional", "")
          .typed<at::Tensor(
              const at::Tensor&, const at::Tensor&, const at::Tensor&,
              const OptTensor&, const OptTensor&, const at::Tensor&,
              const at::Tensor&, bool, c10::string_view, const OptTensor&,
              const OptTensor&, const OptTensor&, const OptTensor&,
              c10::string_view, c10::string_view, double, double,
              c10::string_view, c10::string_view)>();
  const at::Tensor result =
      functional_op.call(x, q13, q2, b13, b2, weights, ids, skip_weighted, act,
                         s13, s2, z13, z2, mode_name, act_quant_name,
                         swiglu_alpha, swiglu_limit, non_finite_name, op_name);
  fz::replace_(output, result);
  fz::commit_update(output);
  fz::sync(output);
}

}  // namespace

// The arguments after `output`, as both ops' schemas spell them.
#define W4JIT_FUSED_MOE_ARGS                                    \
  "Tensor input, Tensor w13, Tensor w2, "                       \
  "Tensor? w13_bias, Tensor? w2_bias, Tensor topk_weights, "    \
  "Tensor topk_id, bool skip_weighted, str act, "               \
  "Tensor? w13_scales=None, Tensor? w2_scales=None, *, "        \
  "Tensor? w13_zero_points=None, Tensor? w2_zero_points=None, " \
  "str mode=\"auto\", str act_quant=\"per_token\", "            \
  "float swiglu_alpha=1.702, float swiglu_limit=7.0, "          \
  "str non_finite=\"error\", "                                  \
  "str zentorch_op_name=\"w4jit::fused_moe\""

void RegisterMoeOps(torch::Library& m) {
  m.def("fused_moe(Tensor(a!) output, " W4JIT_FUSED_MOE_ARGS ") -> ()",
        torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(FusedMoe)));
  // Its functional twin, which fused_moe's functionalization calls; eager
  // callers use fused_moe.
  m.def("fused_moe_functional(" W4JIT_FUSED_MOE_ARGS ") -> Tensor",
        torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(FusedMoeFunctional)));
}

#undef W4JIT_FUSED_MOE_ARGS

TORCH_LIBRARY_IMPL(w4jit, Functionalize, m) {
  m.impl("fused_moe", TORCH_FN(FusedMoeFunctionalize));
}

}  // namespace w4jit::torch_ext
