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
at::Tensor RunLayer(const char* op, const Layer& layer, const at::Tensor& x);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_RUN_LAYER_H_
