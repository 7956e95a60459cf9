// Runs a w4jit layer on a torch activation tensor of any leading shape.
#ifndef W4JIT_TORCH_RUN_LAYER_H_
#define W4JIT_TORCH_RUN_LAYER_H_

#include <ATen/ATen.h>

#include "w4jit/layer.hpp"

namespace w4jit::torch_ext {

// x: [..., K] in the layer's activation dtype (the caller has checked
// dtype, device and K). Returns y [..., N] in the layer's output dtype.
// Rows are read in place when the leading dims collapse to one row stride
// (any 2-D x with unit last stride, e.g. a column slice); otherwise x is
// copied contiguous first. An empty batch returns an empty y.
//
// With a fused epilogue: y has N_out = desc().out_n() columns; `operands`
// are the binary post-ops' inputs, each [..., N_out] like y (read in
// place when contiguous); `out`, when given, is the caller's contiguous
// tensor of y's shape and dtype that receives the result (and is
// returned). `options` as for Layer::Run (a per-call NonFinitePolicy).
// Every mismatch is a RuntimeError naming the op and value.
at::Tensor RunLayer(const char* op, const Layer& layer, const at::Tensor& x,
                    c10::ArrayRef<at::Tensor> operands = {},
                    const at::Tensor* out = nullptr,
                    const LayerRunOptions& options = {});

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_RUN_LAYER_H_
