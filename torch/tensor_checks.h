// Argument checks shared by the ops and the custom class. Each raises a
// c10::Error (RuntimeError in Python) whose message names the op, the
// argument and the bad value.
#ifndef W4JIT_TORCH_TENSOR_CHECKS_H_
#define W4JIT_TORCH_TENSOR_CHECKS_H_

#include <ATen/ATen.h>

#include <initializer_list>
#include <string>

#include "w4jit/types.hpp"

namespace w4jit::torch_ext {

// Sizes as "[4096, 512]" for messages.
std::string ShapeString(const at::Tensor& t);

void CheckCpu(const char* op, const char* name, const at::Tensor& t);
void CheckDim(const char* op, const char* name, const at::Tensor& t,
              int64_t dim);
void CheckDType(const char* op, const char* name, const at::Tensor& t,
                std::initializer_list<at::ScalarType> allowed);
// t.size(d) == want, else "<name> has shape [...]: dim d is x but must be
// want (<why>)".
void CheckSize(const char* op, const char* name, const at::Tensor& t, int64_t d,
               int64_t want, const char* why);

// f32 / bf16 / f16 in w4jit's terms (the caller has checked the dtype).
DType ToDType(at::ScalarType t);
at::ScalarType ToScalarType(DType t);

// Bias in a dtype the layer takes: f32 and bf16 as they are, f16 widened
// to f32 (exact); contiguous.
at::Tensor LayerBias(const at::Tensor& bias);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_TENSOR_CHECKS_H_
