#include "torch/linear_class.h"

#include <torch/library.h>

#include <string>
#include <tuple>

#include "torch/arg_names.h"
#include "torch/checkpoint_tensors.h"
#include "torch/run_layer.h"
#include "torch/tensor_checks.h"
#include "torch/zentorch_ops.h"

namespace w4jit::torch_ext {
namespace {

constexpr const char* kOp = "w4jit.Linear";

// "gelu_tanh+mul_add" -> the epilogue, operands in `dtype`.
Epilogue ParseEpilogue(const std::string& spec, DType dtype) {
  Epilogue e;
  const size_t plus = spec.find('+');
  const std::string head = spec.substr(0, plus);
  const std::string tail =
      plus == std::string::npos ? "" : spec.substr(plus + 1);
  static const std::pair<const char*, Activation> kActs[] = {
      {"none", Activation::kNone},        {"relu", Activation::kRelu},
      {"sigmoid", Activation::kSigmoid},  {"gelu_tanh", Activation::kGeluTanh},
      {"gelu_erf", Activation::kGeluErf}, {"silu", Activation::kSilu}};
  bool found = head == "silu_mul";
  e.silu_mul = found;
  for (const auto& [name, act] : kActs) {
    if (head == name) {
      e.activation = act;
      found = true;
    }
  }
  TORCH_CHECK(found, kOp, ": epilogue '", spec,
              "' must start with none, relu, sigmoid, gelu_tanh, gelu_erf, "
              "silu or silu_mul");
  if (tail == "add") {
    e.binary[e.num_binary++] = {BinaryOp::kAdd, dtype};
  } else if (tail == "mul_add") {
    e.binary[e.num_binary++] = {BinaryOp::kMul, dtype};
    e.binary[e.num_binary++] = {BinaryOp::kAdd, dtype};
  } else if (tail == "add_add") {
    e.binary[e.num_binary++] = {BinaryOp::kAdd, dtype};
    e.binary[e.num_binary++] = {BinaryOp::kAdd, dtype};
  } else {
    TORCH_CHECK(tail.empty(), kOp, ": epilogue '", spec, "': '+", tail,
                "' is not +add, +mul_add or +add_add");
  }
  return e;
}

// "exact" or "zentorch"; "" takes W4JIT_NUMERICS, which applies to W4A16
// layers only (DA8W4 has no dequantized weight to round).
Numerics ParseNumerics(const std::string& name, Mode mode) {
  if (name.empty()) {
    absl::StatusOr<Numerics> n = NumericsFromEnvironment();
    TORCH_CHECK(n.ok(), kOp, ": ", std::string(n.status().message()));
    return mode == Mode::kW4A16 ? *n : Numerics::kExact;
  }
  TORCH_CHECK(name == "exact" || name == "zentorch", kOp, ": numerics '", name,
              "' is not 'exact' or 'zentorch'");
  return name == "zentorch" ? Numerics::kZentorch : Numerics::kExact;
}

}  // namespace

LinearClass::LinearClass(
    const std::string& format, const at::Tensor& qweight,
    const at::Tensor& scales, const c10::optional<at::Tensor>& zero_points,
    const c10::optional<at::Tensor>& g_idx,
    const c10::optional<at::Tensor>& bias, const std::string& mode,
    int64_t group_size, const std::string& act_dtype, bool groups_major,
    const std::string& epilogue, const std::string& act_quant,
    const std::string& numerics, const std::string& non_finite) {
  LayerDesc d;
  d.non_finite = ParseNonFinite(kOp, non_finite);
  d.mode = ParseMode(kOp, mode);
  d.act_quant = ParseActQuant(kOp, act_quant);
  d.numerics = ParseNumerics(numerics, d.mode);
  d.act_dtype = ParseActDType(kOp, act_dtype);
  d.out_dtype = d.act_dtype;
  d.epilogue = ParseEpilogue(epilogue, d.act_dtype);
  const CheckpointTensors t =
      CheckCheckpoint(kOp, ParseWeightFormat(kOp, format), qweight, scales,
                      zero_points, g_idx, bias, group_size, groups_major, &d);
  auto layer = Layer::Create(d, t.view());
  TORCH_CHECK(layer.ok(), kOp, ": ", std::string(layer.status().message()));
  layer_ = std::shared_ptr<const Layer>(std::move(*layer));
}

at::Tensor LinearClass::forward(const at::Tensor& x) const {
  return forward_with(x, {});
}

at::Tensor LinearClass::forward_with(
    const at::Tensor& x, const std::vector<at::Tensor>& operands) const {
  const LayerDesc& d = layer_->desc();
  CheckCpu(kOp, "x", x);
  CheckDType(kOp, "x", x, {ToScalarType(d.act_dtype)});
  TORCH_CHECK(x.dim() >= 1, kOp, ": x is a scalar but must be [..., K]");
  TORCH_CHECK(x.size(-1) == d.k, kOp, ": x has shape ", ShapeString(x),
              ": last dim is ", x.size(-1), " but must be K = ", d.k);
  return RunLayer(kOp, *layer_, x, operands);
}

std::string LinearClass::mode() const { return ToString(layer_->desc().mode); }

std::string LinearClass::act_quant() const {
  return ToString(layer_->desc().act_quant);
}

std::string LinearClass::numerics() const {
  return ToString(layer_->desc().numerics);
}

std::string LinearClass::non_finite() const {
  return ToString(layer_->desc().non_finite);
}

std::vector<std::string> LinearClass::kernel_names() const {
  return layer_->kernel_names();
}

int64_t LinearClass::packed_bytes() const {
  return static_cast<int64_t>(layer_->packed_bytes());
}

// For torch.compile: the scalar properties python/w4jit/_fake.py's
// FakeLinear is built from (torch's __obj_flatten__ protocol: (name, value)
// pairs).
static auto ObjFlatten(const LinearClass& c) {
  const DType out = c.layer().desc().out_dtype;
  using I = std::tuple<std::string, int64_t>;
  using S = std::tuple<std::string, std::string>;
  // The names differ from the methods': the fake object holds them as
  // attributes beside its methods.
  return std::make_tuple(
      I("k", c.in_features()), I("n", c.out_features()),
      I("group", c.group_size()), I("bytes", c.packed_bytes()),
      S("layer_mode", c.mode()), S("layer_act_quant", c.act_quant()),
      S("dtype", out == DType::kBF16 ? "bfloat16" : "float32"));
}

void RegisterLinearClass(torch::Library& m) {
  m.class_<LinearClass>("Linear")
      .def(torch::init<std::string, at::Tensor, at::Tensor,
                       c10::optional<at::Tensor>, c10::optional<at::Tensor>,
                       c10::optional<at::Tensor>, std::string, int64_t,
                       std::string, bool, std::string, std::string, std::string,
                       std::string>())
      .def("forward", &LinearClass::forward)
      .def("forward_with", &LinearClass::forward_with)
      .def("in_features", &LinearClass::in_features)
      .def("out_features", &LinearClass::out_features)
      .def("group_size", &LinearClass::group_size)
      .def("mode", &LinearClass::mode)
      .def("act_quant", &LinearClass::act_quant)
      .def("numerics", &LinearClass::numerics)
      .def("non_finite", &LinearClass::non_finite)
      .def("kernel_names", &LinearClass::kernel_names)
      .def("packed_bytes", &LinearClass::packed_bytes)
      .def("__obj_flatten__", [](const c10::intrusive_ptr<LinearClass>& self) {
        return ObjFlatten(*self);
      });
}

}  // namespace w4jit::torch_ext
