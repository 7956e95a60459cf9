#include "tests/util/test_epilogues.h"

namespace w4jit::testing {

std::vector<Epilogue> TestEpilogues() {
  std::vector<Epilogue> out;
  for (Activation a :
       {Activation::kRelu, Activation::kSigmoid, Activation::kGeluTanh,
        Activation::kGeluErf, Activation::kSilu}) {
    Epilogue e;
    e.activation = a;
    out.push_back(e);
  }
  Epilogue add;
  add.num_binary = 1;
  add.binary[0] = {BinaryOp::kAdd, DType::kBF16};
  out.push_back(add);
  Epilogue mul_add;
  mul_add.activation = Activation::kGeluErf;
  mul_add.num_binary = 2;
  mul_add.binary[0] = {BinaryOp::kMul, DType::kF32};
  mul_add.binary[1] = {BinaryOp::kAdd, DType::kBF16};
  out.push_back(mul_add);
  Epilogue add_add;
  add_add.activation = Activation::kRelu;
  add_add.num_binary = 2;
  add_add.binary[0] = {BinaryOp::kAdd, DType::kF32};
  add_add.binary[1] = {BinaryOp::kAdd, DType::kF32};
  out.push_back(add_add);
  Epilogue silu_mul;
  silu_mul.silu_mul = true;
  out.push_back(silu_mul);
  Epilogue silu_mul_add = silu_mul;
  silu_mul_add.num_binary = 1;
  silu_mul_add.binary[0] = {BinaryOp::kAdd, DType::kBF16};
  out.push_back(silu_mul_add);
  // GeGLU gates (the MoE layer's gelu activations).
  for (Activation a : {Activation::kGeluTanh, Activation::kGeluErf}) {
    Epilogue gated = silu_mul;
    gated.activation = a;
    out.push_back(gated);
  }
  // gpt-oss's gate: its constants, and others whose limit is inside the
  // range of the test layers' gate and up values (both clamps act), with
  // a binary op after it.
  Epilogue oai = silu_mul;
  oai.activation = Activation::kSwigluOai;
  out.push_back(oai);
  oai.gate_alpha = -0.75f;
  oai.gate_limit = 0.375f;
  oai.num_binary = 1;
  oai.binary[0] = {BinaryOp::kMul, DType::kF32};
  out.push_back(oai);
  return out;
}

}  // namespace w4jit::testing
