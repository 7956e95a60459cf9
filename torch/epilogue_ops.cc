#include "torch/epilogue_ops.h"

#include <string>

#include "torch/zentorch_ops.h"

namespace w4jit::torch_ext {
namespace {

using OptT = c10::optional<at::Tensor>;

Epilogue Act(Activation a) {
  Epilogue e;
  e.activation = a;
  return e;
}

// The binary form: ops in order; operand dtypes come from the tensors.
Epilogue Binary(std::initializer_list<BinaryOp> ops) {
  Epilogue e;
  for (BinaryOp op : ops) e.binary[e.num_binary++].op = op;
  return e;
}

Epilogue SiluMul() {
  Epilogue e;
  e.silu_mul = true;
  return e;
}

// Op names for messages, by activation.
template <Activation A>
const char* ActName() {
  switch (A) {
    case Activation::kRelu:
      return "w4jit::woq_linear_relu";
    case Activation::kSigmoid:
      return "w4jit::woq_linear_sigmoid";
    case Activation::kGeluTanh:
      return "w4jit::woq_linear_gelu_tanh";
    case Activation::kGeluErf:
      return "w4jit::woq_linear_gelu_erf";
    default:
      return "w4jit::woq_linear";
  }
}

// Unary post-ops (and woq_linear itself for kNone, used by its .out).
template <Activation A>
at::Tensor UnaryOp(const at::Tensor& x, const at::Tensor& w,
                   const at::Tensor& s, const OptT& zp, const OptT& b,
                   c10::string_view) {
  return WoqLinearEpilogue(ActName<A>(), x, w, s, zp, b, Act(A), {}, nullptr);
}
template <Activation A>
at::Tensor UnaryOut(const at::Tensor& x, const at::Tensor& w,
                    const at::Tensor& s, const OptT& zp, const OptT& b,
                    at::Tensor& out, c10::string_view) {
  WoqLinearEpilogue(ActName<A>(), x, w, s, zp, b, Act(A), {}, &out);
  return out;
}

at::Tensor SiluMulOp(const at::Tensor& x, const at::Tensor& w,
                     const at::Tensor& s, const OptT& zp, const OptT& b,
                     c10::string_view) {
  return WoqLinearEpilogue("w4jit::woq_linear_silu_mul", x, w, s, zp, b,
                           SiluMul(), {}, nullptr);
}
at::Tensor SiluMulOut(const at::Tensor& x, const at::Tensor& w,
                      const at::Tensor& s, const OptT& zp, const OptT& b,
                      at::Tensor& out, c10::string_view) {
  WoqLinearEpilogue("w4jit::woq_linear_silu_mul", x, w, s, zp, b, SiluMul(), {},
                    &out);
  return out;
}

constexpr const char* kAdd = "w4jit::woq_linear_add";
constexpr const char* kMulAdd = "w4jit::woq_linear_mul_add";
constexpr const char* kAddAdd = "w4jit::woq_linear_add_add";

// The binary ops take their operands before bias (zentorch's order).
at::Tensor AddOp(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
                 const OptT& zp, const at::Tensor& a, const OptT& b,
                 c10::string_view) {
  return WoqLinearEpilogue(kAdd, x, w, s, zp, b, Binary({BinaryOp::kAdd}), {a},
                           nullptr);
}
at::Tensor AddOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
                  const OptT& zp, const at::Tensor& a, const OptT& b,
                  at::Tensor& out, c10::string_view) {
  WoqLinearEpilogue(kAdd, x, w, s, zp, b, Binary({BinaryOp::kAdd}), {a}, &out);
  return out;
}
at::Tensor MulAddOp(const at::Tensor& x, const at::Tensor& w,
                    const at::Tensor& s, const OptT& zp, const at::Tensor& mul,
                    const at::Tensor& add, const OptT& b, c10::string_view) {
  return WoqLinearEpilogue(kMulAdd, x, w, s, zp, b,
                           Binary({BinaryOp::kMul, BinaryOp::kAdd}), {mul, add},
                           nullptr);
}
at::Tensor MulAddOut(const at::Tensor& x, const at::Tensor& w,
                     const at::Tensor& s, const OptT& zp, const at::Tensor& mul,
                     const at::Tensor& add, const OptT& b, at::Tensor& out,
                     c10::string_view) {
  WoqLinearEpilogue(kMulAdd, x, w, s, zp, b,
                    Binary({BinaryOp::kMul, BinaryOp::kAdd}), {mul, add}, &out);
  return out;
}
at::Tensor AddAddOp(const at::Tensor& x, const at::Tensor& w,
                    const at::Tensor& s, const OptT& zp, const at::Tensor& a1,
                    const at::Tensor& a2, const OptT& b, c10::string_view) {
  return WoqLinearEpilogue(kAddAdd, x, w, s, zp, b,
                           Binary({BinaryOp::kAdd, BinaryOp::kAdd}), {a1, a2},
                           nullptr);
}
at::Tensor AddAddOut(const at::Tensor& x, const at::Tensor& w,
                     const at::Tensor& s, const OptT& zp, const at::Tensor& a1,
                     const at::Tensor& a2, const OptT& b, at::Tensor& out,
                     c10::string_view) {
  WoqLinearEpilogue(kAddAdd, x, w, s, zp, b,
                    Binary({BinaryOp::kAdd, BinaryOp::kAdd}), {a1, a2}, &out);
  return out;
}

at::Tensor DqOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
                 const OptT& b, at::Tensor& out, c10::string_view) {
  DynamicQLinear(x, w, s, b, &out);
  return out;
}

// zentorch's "woq_linear_relu(Tensor input, Tensor weight, Tensor
// weight_scales, Tensor? weight_zero_points<extra>, Tensor? bias=None, *,
// str zentorch_op_name=...) -> Tensor" (the binary operands in <extra>,
// before bias), and its .out overload with `out` keyword-only.
c10::FunctionSchema Schema(const std::string& name, const std::string& extra,
                           bool out) {
  const std::string head =
      name + (out ? ".out" : "") +
      "(Tensor input, Tensor weight, Tensor weight_scales, "
      "Tensor? weight_zero_points" +
      extra + ", Tensor? bias=None, *, ";
  const std::string tail = "str zentorch_op_name=\"w4jit::" + name + "\")";
  const std::string text =
      out ? head + "Tensor(a!) out, " + tail + " -> Tensor(a!)"
          : head + tail + " -> Tensor";
  return torch::schema(text.c_str());
}

}  // namespace

void RegisterEpilogueOps(torch::Library& m) {
  m.def(Schema("woq_linear", "", true), TORCH_FN(UnaryOut<Activation::kNone>));
  m.def(Schema("woq_linear_relu", "", false),
        TORCH_FN(UnaryOp<Activation::kRelu>));
  m.def(Schema("woq_linear_relu", "", true),
        TORCH_FN(UnaryOut<Activation::kRelu>));
  m.def(Schema("woq_linear_sigmoid", "", false),
        TORCH_FN(UnaryOp<Activation::kSigmoid>));
  m.def(Schema("woq_linear_sigmoid", "", true),
        TORCH_FN(UnaryOut<Activation::kSigmoid>));
  m.def(Schema("woq_linear_gelu_tanh", "", false),
        TORCH_FN(UnaryOp<Activation::kGeluTanh>));
  m.def(Schema("woq_linear_gelu_tanh", "", true),
        TORCH_FN(UnaryOut<Activation::kGeluTanh>));
  m.def(Schema("woq_linear_gelu_erf", "", false),
        TORCH_FN(UnaryOp<Activation::kGeluErf>));
  m.def(Schema("woq_linear_gelu_erf", "", true),
        TORCH_FN(UnaryOut<Activation::kGeluErf>));
  m.def(Schema("woq_linear_silu_mul", "", false), TORCH_FN(SiluMulOp));
  m.def(Schema("woq_linear_silu_mul", "", true), TORCH_FN(SiluMulOut));
  m.def(Schema("woq_linear_add", ", Tensor add_input", false), TORCH_FN(AddOp));
  m.def(Schema("woq_linear_add", ", Tensor add_input", true), TORCH_FN(AddOut));
  m.def(Schema("woq_linear_mul_add", ", Tensor mul_input, Tensor add_input",
               false),
        TORCH_FN(MulAddOp));
  m.def(Schema("woq_linear_mul_add", ", Tensor mul_input, Tensor add_input",
               true),
        TORCH_FN(MulAddOut));
  m.def(Schema("woq_linear_add_add", ", Tensor add_input, Tensor add_input_2",
               false),
        TORCH_FN(AddAddOp));
  m.def(Schema("woq_linear_add_add", ", Tensor add_input, Tensor add_input_2",
               true),
        TORCH_FN(AddAddOut));
  m.def(
      "dynamic_qlinear.out(Tensor input, Tensor weight, Tensor "
      "weight_scales, Tensor? bias=None, *, Tensor(a!) out, "
      "str zentorch_op_name=\"w4jit::dynamic_qlinear\") -> Tensor(a!)",
      TORCH_FN(DqOut));
}

}  // namespace w4jit::torch_ext
