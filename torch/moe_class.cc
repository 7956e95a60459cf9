#include "torch/moe_class.h"

#include <torch/library.h>

#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "torch/arg_names.h"
#include "torch/checkpoint_tensors.h"
#include "torch/moe_routing_args.h"
#include "torch/tensor_checks.h"
#include "torch/zentorch_ops.h"

namespace w4jit::torch_ext {
namespace {

constexpr const char* kOp = "w4jit.MoE";

// One projection's per-expert tensor lists.
struct ProjectionLists {
  const char* name;  // "w13" / "w2"
  const std::vector<at::Tensor>& qweight;
  const std::vector<at::Tensor>& scales;
  const std::vector<at::Tensor>& zero_points;
  const std::vector<at::Tensor>& g_idx;
  const std::vector<at::Tensor>& bias;
};

// Each list holds one tensor per expert, or none where `optional`.
void CheckCounts(const ProjectionLists& p, int64_t experts) {
  const std::pair<const char*, const std::vector<at::Tensor>*> lists[] = {
      {"qweight", &p.qweight},
      {"scales", &p.scales},
      {"zero_points", &p.zero_points},
      {"g_idx", &p.g_idx},
      {"bias", &p.bias}};
  for (const auto& [what, list] : lists) {
    const int64_t n = static_cast<int64_t>(list->size());
    const bool required = list == &p.qweight || list == &p.scales;
    TORCH_CHECK(n == experts || (n == 0 && !required), kOp, ": ", p.name, "_",
                what, " has ", n, " expert tensors but w13_qweight has ",
                experts, required ? "" : " (or give none)");
  }
}

c10::optional<at::Tensor> Nth(const std::vector<at::Tensor>& list, int64_t e) {
  if (list.empty()) return c10::nullopt;
  return list[e];
}

// Expert e's tensors of projection p, checked; fills *d (shapes from the
// tensors). Biases become f32 (exact) so that both projections share one
// bias dtype.
CheckpointTensors CheckExpert(const ProjectionLists& p, int64_t e,
                              WeightFormat f, int64_t group_size,
                              bool groups_major, LayerDesc* d) {
  const std::string op = absl::StrCat(kOp, ": expert ", e, " ", p.name);
  c10::optional<at::Tensor> bias = Nth(p.bias, e);
  if (bias.has_value() && bias->is_floating_point()) {
    bias = bias->to(at::kFloat);
  }
  return CheckCheckpoint(op.c_str(), f, p.qweight[e], p.scales[e],
                         Nth(p.zero_points, e), Nth(p.g_idx, e), bias,
                         group_size, groups_major, d);
}

}  // namespace

MoeClass::MoeClass(const std::string& format,
                   const std::vector<at::Tensor>& w13_qweight,
                   const std::vector<at::Tensor>& w13_scales,
                   const std::vector<at::Tensor>& w13_zero_points,
                   const std::vector<at::Tensor>& w13_g_idx,
                   const std::vector<at::Tensor>& w13_bias,
                   const std::vector<at::Tensor>& w2_qweight,
                   const std::vector<at::Tensor>& w2_scales,
                   const std::vector<at::Tensor>& w2_zero_points,
                   const std::vector<at::Tensor>& w2_g_idx,
                   const std::vector<at::Tensor>& w2_bias,
                   const std::string& mode, int64_t group_size,
                   const std::string& act_dtype, bool groups_major,
                   const std::string& activation, const std::string& act_quant,
                   double swiglu_alpha, double swiglu_limit,
                   const std::string& non_finite) {
  const WeightFormat f = ParseWeightFormat(kOp, format);
  MoeDesc d;
  d.non_finite = ParseNonFinite(kOp, non_finite);
  d.mode = ParseMode(kOp, mode);
  d.act_quant = ParseActQuant(kOp, act_quant);
  d.act_dtype = ParseActDType(kOp, act_dtype);
  d.out_dtype = d.act_dtype;
  d.activation = ParseMoeActivation(kOp, "activation", activation);
  d.swiglu_alpha = static_cast<float>(swiglu_alpha);
  d.swiglu_limit = static_cast<float>(swiglu_limit);
  d.experts = static_cast<int64_t>(w13_qweight.size());
  TORCH_CHECK(d.experts >= 1, kOp, ": no experts (w13_qweight is empty)");
  const ProjectionLists p13{"w13",           w13_qweight, w13_scales,
                            w13_zero_points, w13_g_idx,   w13_bias};
  const ProjectionLists p2{"w2",           w2_qweight, w2_scales,
                           w2_zero_points, w2_g_idx,   w2_bias};
  CheckCounts(p13, d.experts);
  CheckCounts(p2, d.experts);
  TORCH_CHECK(w13_zero_points.empty() == w2_zero_points.empty(), kOp,
              ": give zero points for both projections (u4) or neither (s4)");

  std::vector<CheckpointTensors> kept;  // alive until Create returns
  MoeWeights views;
  for (int64_t e = 0; e < d.experts; ++e) {
    LayerDesc d13, d2;
    kept.push_back(CheckExpert(p13, e, f, group_size, groups_major, &d13));
    views.w13.push_back(kept.back().view());
    if (e == 0) {
      TORCH_CHECK(d13.n % 2 == 0, kOp, ": expert 0 w13 has N = ", d13.n,
                  " rows, which must be even ([gate | up], 2I)");
      d.hidden = d13.k;
      d.intermediate = d13.n / 2;
      d.group_size = d13.group_size;
      d.weight_type = d13.weight_type;
      d.scale_dtype = d13.scale_dtype;
    }
    TORCH_CHECK(d13.n == 2 * d.intermediate && d13.k == d.hidden, kOp,
                ": expert ", e, " w13 is N = ", d13.n, ", K = ", d13.k,
                " but expert 0's is N = 2I = ", 2 * d.intermediate,
                ", K = H = ", d.hidden);
    kept.push_back(CheckExpert(p2, e, f, group_size, groups_major, &d2));
    views.w2.push_back(kept.back().view());
    TORCH_CHECK(d2.n == d.hidden && d2.k == d.intermediate, kOp, ": expert ", e,
                " w2 is N = ", d2.n, ", K = ", d2.k,
                " but must be N = H = ", d.hidden, ", K = I = ", d.intermediate,
                " (from expert 0's w13)");
    for (const auto& [name, ld] : {std::pair{"w13", &d13}, {"w2", &d2}}) {
      TORCH_CHECK(ld->scale_dtype == d.scale_dtype, kOp, ": expert ", e, " ",
                  name, " scales are ", ToString(ld->scale_dtype),
                  " but expert 0's w13 scales are ", ToString(d.scale_dtype),
                  " (one scale dtype for every expert)");
    }
    d.has_w13_bias = d13.has_bias;
    d.has_w2_bias = d2.has_bias;
  }
  d.bias_dtype = DType::kF32;
  auto layer = MoeLayer::Create(d, views);
  TORCH_CHECK(layer.ok(), kOp, ": ", std::string(layer.status().message()));
  layer_ = std::shared_ptr<const MoeLayer>(*std::move(layer));
}

at::Tensor MoeClass::forward(
    const at::Tensor& x, const at::Tensor& topk_ids,
    const c10::optional<at::Tensor>& topk_weights) const {
  const MoeDesc& d = layer_->desc();
  CheckCpu(kOp, "x", x);
  CheckDim(kOp, "x", x, 2);
  CheckDType(kOp, "x", x, {ToScalarType(d.act_dtype)});
  CheckSize(kOp, "x", x, 1, d.hidden, "H, the experts' hidden size");
  const int64_t t = x.size(0);
  const RoutingTensors r =
      CheckRouting(kOp, "topk_ids", topk_ids,
                   Present(topk_weights) ? &*topk_weights : nullptr, t,
                   d.experts, d.non_finite);
  at::Tensor y = at::empty({t, d.hidden}, x.options());
  if (t == 0) return y;
  // Rows are read in place when each is contiguous and they do not
  // overlap; anything else is copied.
  const at::Tensor xr =
      x.stride(1) == 1 && x.stride(0) >= d.hidden ? x : x.contiguous();
  MoeRunOptions options;
  options.unweighted = !r.weights.defined();
  const absl::Status s =
      layer_->Run(t, xr.data_ptr(), xr.stride(0), r.ids.data_ptr<int32_t>(),
                  options.unweighted ? nullptr : r.weights.data_ptr<float>(),
                  r.k, y.data_ptr(), d.hidden, options);
  TORCH_CHECK(s.ok(), kOp, ": ", std::string(s.message()));
  return y;
}

std::string MoeClass::mode() const { return ToString(layer_->desc().mode); }

std::string MoeClass::activation() const {
  switch (layer_->desc().activation) {
    case Activation::kGeluErf:
      return "gelu";
    case Activation::kGeluTanh:
      return "gelu_tanh";
    case Activation::kSwigluOai:
      return "swigluoai";
    default:
      return "silu";
  }
}

std::string MoeClass::non_finite() const {
  return ToString(layer_->desc().non_finite);
}

double MoeClass::swiglu_alpha() const { return layer_->desc().swiglu_alpha; }

double MoeClass::swiglu_limit() const { return layer_->desc().swiglu_limit; }

std::string MoeClass::act_quant() const {
  return ToString(layer_->desc().act_quant);
}

std::vector<std::string> MoeClass::kernel_names() const {
  return layer_->kernel_names();
}

int64_t MoeClass::packed_bytes() const {
  return static_cast<int64_t>(layer_->packed_bytes());
}

int64_t MoeClass::expert_packed_bytes() const {
  return static_cast<int64_t>(layer_->expert_packed_bytes());
}

// For torch.compile: the scalar properties python/w4jit/_fake.py's FakeMoE
// is built from (torch's __obj_flatten__ protocol: (name, value) pairs).
static auto ObjFlatten(const MoeClass& c) {
  const DType act = c.layer().desc().act_dtype;
  using I = std::tuple<std::string, int64_t>;
  using S = std::tuple<std::string, std::string>;
  // The names differ from the methods': the fake object holds them as
  // attributes beside its methods.
  return std::make_tuple(
      I("num_experts", c.experts()), I("h", c.hidden()),
      I("i", c.intermediate()), I("group", c.group_size()),
      I("bytes", c.packed_bytes()), I("expert_bytes", c.expert_packed_bytes()),
      S("layer_mode", c.mode()), S("gate", c.activation()),
      S("layer_act_quant", c.act_quant()),
      S("dtype", act == DType::kBF16 ? "bfloat16" : "float32"));
}

void RegisterMoeClass(torch::Library& m) {
  using List = std::vector<at::Tensor>;
  m.class_<MoeClass>("MoE")
      .def(
          torch::init<std::string, List, List, List, List, List, List, List,
                      List, List, List, std::string, int64_t, std::string, bool,
                      std::string, std::string, double, double, std::string>())
      .def("forward", &MoeClass::forward)
      .def("experts", &MoeClass::experts)
      .def("hidden", &MoeClass::hidden)
      .def("intermediate", &MoeClass::intermediate)
      .def("group_size", &MoeClass::group_size)
      .def("mode", &MoeClass::mode)
      .def("activation", &MoeClass::activation)
      .def("act_quant", &MoeClass::act_quant)
      .def("swiglu_alpha", &MoeClass::swiglu_alpha)
      .def("swiglu_limit", &MoeClass::swiglu_limit)
      .def("non_finite", &MoeClass::non_finite)
      .def("kernel_names", &MoeClass::kernel_names)
      .def("packed_bytes", &MoeClass::packed_bytes)
      .def("expert_packed_bytes", &MoeClass::expert_packed_bytes)
      .def("__obj_flatten__", [](const c10::intrusive_ptr<MoeClass>& self) {
        return ObjFlatten(*self);
      });
}

}  // namespace w4jit::torch_ext
