#include "torch/epilogue_ops.h"

#include <torch/version.h>

#include <string>
#include <utility>
#include <vector>

#include "torch/arg_names.h"
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
// Every op ends in (non_finite, zentorch_op_name) and every .out overload
// in (zentorch_op_name, non_finite, out): see Schema below.
template <Activation A>
at::Tensor UnaryOp(const at::Tensor& x, const at::Tensor& w,
                   const at::Tensor& s, const OptT& zp, const OptT& b,
                   c10::string_view nf, c10::string_view) {
  return WoqLinearEpilogue(ActName<A>(), x, w, s, zp, b, Act(A), {}, nullptr,
                           ParseNonFinite(ActName<A>(), nf));
}
template <Activation A>
void UnaryOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
              const OptT& zp, const OptT& b, c10::string_view,
              c10::string_view nf, at::Tensor& out) {
  WoqLinearEpilogue(ActName<A>(), x, w, s, zp, b, Act(A), {}, &out,
                    ParseNonFinite(ActName<A>(), nf));
}

constexpr const char* kSiluMul = "w4jit::woq_linear_silu_mul";

at::Tensor SiluMulOp(const at::Tensor& x, const at::Tensor& w,
                     const at::Tensor& s, const OptT& zp, const OptT& b,
                     c10::string_view nf, c10::string_view) {
  return WoqLinearEpilogue(kSiluMul, x, w, s, zp, b, SiluMul(), {}, nullptr,
                           ParseNonFinite(kSiluMul, nf));
}
void SiluMulOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
                const OptT& zp, const OptT& b, c10::string_view,
                c10::string_view nf, at::Tensor& out) {
  WoqLinearEpilogue(kSiluMul, x, w, s, zp, b, SiluMul(), {}, &out,
                    ParseNonFinite(kSiluMul, nf));
}

constexpr const char* kAdd = "w4jit::woq_linear_add";
constexpr const char* kMulAdd = "w4jit::woq_linear_mul_add";
constexpr const char* kAddAdd = "w4jit::woq_linear_add_add";

// The binary ops take their operands before bias (zentorch's order).
at::Tensor AddOp(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
                 const OptT& zp, const at::Tensor& a, const OptT& b,
                 c10::string_view nf, c10::string_view) {
  return WoqLinearEpilogue(kAdd, x, w, s, zp, b, Binary({BinaryOp::kAdd}), {a},
                           nullptr, ParseNonFinite(kAdd, nf));
}
void AddOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
            const OptT& zp, const at::Tensor& a, const OptT& b,
            c10::string_view, c10::string_view nf, at::Tensor& out) {
  WoqLinearEpilogue(kAdd, x, w, s, zp, b, Binary({BinaryOp::kAdd}), {a}, &out,
                    ParseNonFinite(kAdd, nf));
}
at::Tensor MulAddOp(const at::Tensor& x, const at::Tensor& w,
                    const at::Tensor& s, const OptT& zp, const at::Tensor& mul,
                    const at::Tensor& add, const OptT& b, c10::string_view nf,
                    c10::string_view) {
  return WoqLinearEpilogue(kMulAdd, x, w, s, zp, b,
                           Binary({BinaryOp::kMul, BinaryOp::kAdd}), {mul, add},
                           nullptr, ParseNonFinite(kMulAdd, nf));
}
void MulAddOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
               const OptT& zp, const at::Tensor& mul, const at::Tensor& add,
               const OptT& b, c10::string_view, c10::string_view nf,
               at::Tensor& out) {
  WoqLinearEpilogue(kMulAdd, x, w, s, zp, b,
                    Binary({BinaryOp::kMul, BinaryOp::kAdd}), {mul, add}, &out,
                    ParseNonFinite(kMulAdd, nf));
}
at::Tensor AddAddOp(const at::Tensor& x, const at::Tensor& w,
                    const at::Tensor& s, const OptT& zp, const at::Tensor& a1,
                    const at::Tensor& a2, const OptT& b, c10::string_view nf,
                    c10::string_view) {
  return WoqLinearEpilogue(kAddAdd, x, w, s, zp, b,
                           Binary({BinaryOp::kAdd, BinaryOp::kAdd}), {a1, a2},
                           nullptr, ParseNonFinite(kAddAdd, nf));
}
void AddAddOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
               const OptT& zp, const at::Tensor& a1, const at::Tensor& a2,
               const OptT& b, c10::string_view, c10::string_view nf,
               at::Tensor& out) {
  WoqLinearEpilogue(kAddAdd, x, w, s, zp, b,
                    Binary({BinaryOp::kAdd, BinaryOp::kAdd}), {a1, a2}, &out,
                    ParseNonFinite(kAddAdd, nf));
}

// act_quant as for dynamic_qlinear; is_weight_prepacked (zentorch's) must
// be false.
void DqOut(const at::Tensor& x, const at::Tensor& w, const at::Tensor& s,
           const OptT& b, bool is_weight_prepacked, c10::string_view act_quant,
           c10::string_view nf, c10::string_view, at::Tensor& out) {
  constexpr const char* kOp = "w4jit::dynamic_qlinear.out";
  CheckNotPrepacked(kOp, is_weight_prepacked);
  DynamicQLinear(x, w, s, b, &out, ParseActQuant(kOp, act_quant),
                 ParseNonFinite(kOp, nf));
}

// zentorch's "woq_linear_relu(Tensor input, Tensor weight, Tensor
// weight_scales, Tensor? weight_zero_points<extra>, Tensor? bias=None, *,
// str zentorch_op_name=...) -> Tensor" (the binary operands in <extra>,
// before bias), and its .out overload as zentorch 2.14 has it: the op name
// positional after bias, `out` keyword-only, nothing returned. The default
// op name is zentorch's with "zentorch::zentorch_" made "w4jit::". w4jit's
// own keyword non_finite ("propagate" or "error", NonFinitePolicy) comes
// first after the `*` (python/w4jit/zentorch_contract.py, KEYWORD_EXTRAS).
constexpr const char* kNonFiniteArg = "str non_finite=\"propagate\"";

c10::FunctionSchema Schema(const std::string& name, const std::string& extra,
                           bool out) {
  const std::string head = name + (out ? ".out" : "") +
                           "(Tensor input, Tensor weight, Tensor "
                           "weight_scales, Tensor? weight_zero_points" +
                           extra + ", Tensor? bias=None, ";
  const std::string text =
      out ? head + "str zentorch_op_name=\"w4jit::" + name + "_out\", *, " +
                kNonFiniteArg + ", Tensor(a!) out) -> ()"
          : head + "*, " + kNonFiniteArg +
                ", str zentorch_op_name=\"w4jit::" + name + "\") -> Tensor";
  return torch::schema(text.c_str());
}

// The tags zentorch gives the op: needs_fixed_stride_order on the binary
// post-ops (their operands are read with the output's strides), where this
// torch has the tag (2.4 on; torch 1.13's def takes no tags with a kernel).
template <typename Func>
void Def(torch::Library& m, c10::FunctionSchema schema, Func&& f,
         bool fixed_stride_order) {
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  std::vector<at::Tag> tags;
  if (fixed_stride_order) tags.push_back(at::Tag::needs_fixed_stride_order);
  m.def(std::move(schema),
        torch::dispatch(c10::DispatchKey::CPU, std::forward<Func>(f)), tags);
#else
  (void)fixed_stride_order;
  m.def(std::move(schema),
        torch::dispatch(c10::DispatchKey::CPU, std::forward<Func>(f)));
#endif
}

}  // namespace

void RegisterEpilogueOps(torch::Library& m) {
  Def(m, Schema("woq_linear", "", true), TORCH_FN(UnaryOut<Activation::kNone>),
      false);
  Def(m, Schema("woq_linear_relu", "", false),
      TORCH_FN(UnaryOp<Activation::kRelu>), false);
  Def(m, Schema("woq_linear_relu", "", true),
      TORCH_FN(UnaryOut<Activation::kRelu>), false);
  Def(m, Schema("woq_linear_sigmoid", "", false),
      TORCH_FN(UnaryOp<Activation::kSigmoid>), false);
  Def(m, Schema("woq_linear_sigmoid", "", true),
      TORCH_FN(UnaryOut<Activation::kSigmoid>), false);
  Def(m, Schema("woq_linear_gelu_tanh", "", false),
      TORCH_FN(UnaryOp<Activation::kGeluTanh>), false);
  Def(m, Schema("woq_linear_gelu_tanh", "", true),
      TORCH_FN(UnaryOut<Activation::kGeluTanh>), false);
  Def(m, Schema("woq_linear_gelu_erf", "", false),
      TORCH_FN(UnaryOp<Activation::kGeluErf>), false);
  Def(m, Schema("woq_linear_gelu_erf", "", true),
      TORCH_FN(UnaryOut<Activation::kGeluErf>), false);
  Def(m, Schema("woq_linear_silu_mul", "", false), TORCH_FN(SiluMulOp), false);
  Def(m, Schema("woq_linear_silu_mul", "", true), TORCH_FN(SiluMulOut), false);
  const std::string add = ", Tensor add_input";
  const std::string mul_add = ", Tensor mul_input, Tensor add_input";
  const std::string add_add = ", Tensor add_input, Tensor add_input_2";
  Def(m, Schema("woq_linear_add", add, false), TORCH_FN(AddOp), true);
  Def(m, Schema("woq_linear_add", add, true), TORCH_FN(AddOut), true);
  Def(m, Schema("woq_linear_mul_add", mul_add, false), TORCH_FN(MulAddOp),
      true);
  Def(m, Schema("woq_linear_mul_add", mul_add, true), TORCH_FN(MulAddOut),
      true);
  Def(m, Schema("woq_linear_add_add", add_add, false), TORCH_FN(AddAddOp),
      true);
  Def(m, Schema("woq_linear_add_add", add_add, true), TORCH_FN(AddAddOut),
      true);
  // zentorch's dynamic_qlinear.out keeps every option keyword-only, `out`
  // last; act_quant and non_finite are w4jit's.
  m.def(
      "dynamic_qlinear.out(Tensor input, Tensor weight, Tensor "
      "weight_scales, Tensor? bias=None, *, bool is_weight_prepacked=False, "
      "str act_quant=\"per_token\", str non_finite=\"propagate\", "
      "str zentorch_op_name=\"w4jit::dynamic_qlinear.out\", "
      "Tensor(a!) out) -> ()",
      torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(DqOut)));
}

}  // namespace w4jit::torch_ext
