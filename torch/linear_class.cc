#include "torch/linear_class.h"

#include <torch/library.h>

#include "torch/run_layer.h"
#include "torch/tensor_checks.h"
#include "torch/zentorch_ops.h"

namespace w4jit::torch_ext {
namespace {

constexpr const char* kOp = "w4jit.Linear";

WeightFormat ParseFormat(const std::string& f) {
  if (f == "compressed_tensors") return WeightFormat::kCompressedTensors;
  if (f == "gptq_v1" || f == "gptq") return WeightFormat::kGptqV1;
  if (f == "gptq_v2") return WeightFormat::kGptqV2;
  if (f == "awq") return WeightFormat::kAwqGemm;
  if (f == "unpacked_int8") return WeightFormat::kUnpackedInt8;
  if (f == "zentorch_int32") return WeightFormat::kZentorchInt32;
  TORCH_CHECK(false, kOp, ": format '", f,
              "' is not one of compressed_tensors, gptq_v1, gptq_v2, awq, "
              "unpacked_int8, zentorch_int32");
}

Mode ParseMode(const std::string& m) {
  if (m == "w4a16") return Mode::kW4A16;
  if (m == "da8w4") return Mode::kDA8W4;
  TORCH_CHECK(false, kOp, ": mode '", m, "' is not w4a16 or da8w4");
}

DType ParseActDType(const std::string& d) {
  if (d == "bfloat16") return DType::kBF16;
  if (d == "float32") return DType::kF32;
  TORCH_CHECK(false, kOp, ": act_dtype '", d, "' is not bfloat16 or float32");
}

// N and K from the weight's shape in `format`.
void WeightDims(WeightFormat f, const at::Tensor& q, int64_t* n, int64_t* k) {
  CheckDim(kOp, "qweight", q, 2);
  switch (f) {
    case WeightFormat::kUnpackedInt8:
      CheckDType(kOp, "qweight", q, {at::kChar});
      *n = q.size(0);
      *k = q.size(1);
      return;
    case WeightFormat::kZentorchInt32:
    case WeightFormat::kCompressedTensors:
      CheckDType(kOp, "qweight", q, {at::kInt});
      *n = q.size(0);
      *k = q.size(1) * 8;
      return;
    case WeightFormat::kGptqV1:
    case WeightFormat::kGptqV2:
      CheckDType(kOp, "qweight", q, {at::kInt});
      *n = q.size(1);
      *k = q.size(0) * 8;
      return;
    case WeightFormat::kAwqGemm:
      CheckDType(kOp, "qweight", q, {at::kInt});
      *n = q.size(1) * 8;
      *k = q.size(0);
      return;
    case WeightFormat::kTinygemmInt4Pack:
      // Not a w4jit.Linear format (ParseFormat never returns it): torchao
      // checkpoints go through woq_repack_from_int4pack + woq_linear.
      TORCH_CHECK(false, kOp,
                  ": tinygemm int4pack weights are taken by "
                  "woq_repack_from_int4pack + woq_linear");
  }
}

// Expected [rows, cols] of scales and of zero points for `format`.
struct GroupShapes {
  int64_t scale_rows, scale_cols;
  int64_t zp_rows, zp_cols;
  at::ScalarType zp_dtype;
};

GroupShapes ShapesFor(WeightFormat f, int64_t n, int64_t g, bool groups_major) {
  switch (f) {
    case WeightFormat::kUnpackedInt8:
    case WeightFormat::kZentorchInt32:
      return groups_major ? GroupShapes{g, n, g, n, at::kChar}
                          : GroupShapes{n, g, n, g, at::kChar};
    case WeightFormat::kCompressedTensors:
      return {n, g, n / 8, g, at::kInt};
    default:  // GPTQ and AWQ: scales [G, N], zeros packed along N
      return {g, n, g, n / 8, at::kInt};
  }
}

void CheckShape2(const char* name, const at::Tensor& t, int64_t rows,
                 int64_t cols, const char* why) {
  CheckCpu(kOp, name, t);
  CheckDim(kOp, name, t, 2);
  CheckSize(kOp, name, t, 0, rows, why);
  CheckSize(kOp, name, t, 1, cols, why);
}

bool Present(const c10::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

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

}  // namespace

LinearClass::LinearClass(const std::string& format, const at::Tensor& qweight,
                         const at::Tensor& scales,
                         const c10::optional<at::Tensor>& zero_points,
                         const c10::optional<at::Tensor>& g_idx,
                         const c10::optional<at::Tensor>& bias,
                         const std::string& mode, int64_t group_size,
                         const std::string& act_dtype, bool groups_major,
                         const std::string& epilogue,
                         const std::string& act_quant) {
  const WeightFormat f = ParseFormat(format);
  LayerDesc d;
  d.mode = ParseMode(mode);
  d.act_quant = ParseActQuant(kOp, act_quant);
  d.act_dtype = ParseActDType(act_dtype);
  d.out_dtype = d.act_dtype;
  d.epilogue = ParseEpilogue(epilogue, d.act_dtype);
  CheckCpu(kOp, "qweight", qweight);
  WeightDims(f, qweight, &d.n, &d.k);
  TORCH_CHECK(d.n > 0 && d.k > 0, kOp, ": qweight has shape ",
              ShapeString(qweight), ", which gives N = ", d.n, ", K = ", d.k,
              "; both must be > 0");
  TORCH_CHECK(group_size == -1 || (group_size > 0 && d.k % group_size == 0),
              kOp, ": group_size = ", group_size,
              " must be -1 (per-channel) or a positive divisor of K = ", d.k);
  d.group_size = group_size;
  const int64_t g = d.groups();
  const GroupShapes shapes = ShapesFor(f, d.n, g, groups_major);

  CheckShape2("scales", scales, shapes.scale_rows, shapes.scale_cols,
              "from N, K and group_size in this format");
  CheckDType(kOp, "scales", scales, {at::kFloat, at::kBFloat16, at::kHalf});
  d.scale_dtype = ToDType(scales.scalar_type());
  d.weight_type = Present(zero_points) ? WeightType::kU4 : WeightType::kS4;
  if (Present(zero_points)) {
    TORCH_CHECK(shapes.zp_dtype == at::kChar || d.n % 8 == 0, kOp,
                ": N = ", d.n, " must be a multiple of 8 for ", format,
                " zero points (8 per int32 along N)");
    CheckShape2("zero_points", *zero_points, shapes.zp_rows, shapes.zp_cols,
                "from N and group_size in this format");
    CheckDType(kOp, "zero_points", *zero_points, {shapes.zp_dtype});
  }
  if (Present(g_idx)) {
    // Act-order (runtime/formats/act_order.h): every format but AWQ.
    TORCH_CHECK(f != WeightFormat::kAwqGemm, kOp,
                ": g_idx (act-order) is not meaningful for ", format,
                ", which has no act-order");
    CheckCpu(kOp, "g_idx", *g_idx);
    CheckDim(kOp, "g_idx", *g_idx, 1);
    CheckDType(kOp, "g_idx", *g_idx, {at::kInt});
    CheckSize(kOp, "g_idx", *g_idx, 0, d.k, "K");
  }
  d.has_bias = Present(bias);
  at::Tensor b;
  if (d.has_bias) {
    CheckCpu(kOp, "bias", *bias);
    CheckDim(kOp, "bias", *bias, 1);
    CheckDType(kOp, "bias", *bias, {at::kFloat, at::kBFloat16, at::kHalf});
    CheckSize(kOp, "bias", *bias, 0, d.n, "N");
    b = LayerBias(*bias);
    d.bias_dtype = ToDType(b.scalar_type());
  }

  const at::Tensor q = qweight.contiguous();
  const at::Tensor s = scales.contiguous();
  const at::Tensor z =
      Present(zero_points) ? zero_points->contiguous() : at::Tensor();
  const at::Tensor gi = Present(g_idx) ? g_idx->contiguous() : at::Tensor();
  WeightsView v;
  v.format = f;
  v.qweight = q.data_ptr();
  v.scales = s.data_ptr();
  v.zero_points = z.defined() ? z.data_ptr() : nullptr;
  v.g_idx = gi.defined() ? gi.data_ptr<int32_t>() : nullptr;
  v.bias = b.defined() ? b.data_ptr() : nullptr;
  v.groups_major = groups_major;
  auto layer = Layer::Create(d, v);
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

std::vector<std::string> LinearClass::kernel_names() const {
  return layer_->kernel_names();
}

int64_t LinearClass::packed_bytes() const {
  return static_cast<int64_t>(layer_->packed_bytes());
}

void RegisterLinearClass(torch::Library& m) {
  m.class_<LinearClass>("Linear")
      .def(torch::init<std::string, at::Tensor, at::Tensor,
                       c10::optional<at::Tensor>, c10::optional<at::Tensor>,
                       c10::optional<at::Tensor>, std::string, int64_t,
                       std::string, bool, std::string, std::string>())
      .def("forward", &LinearClass::forward)
      .def("forward_with", &LinearClass::forward_with)
      .def("in_features", &LinearClass::in_features)
      .def("out_features", &LinearClass::out_features)
      .def("group_size", &LinearClass::group_size)
      .def("mode", &LinearClass::mode)
      .def("act_quant", &LinearClass::act_quant)
      .def("kernel_names", &LinearClass::kernel_names)
      .def("packed_bytes", &LinearClass::packed_bytes);
}

}  // namespace w4jit::torch_ext
