// The zentorch post-op family on woq_linear (relu, sigmoid, gelu_tanh,
// gelu_erf, add, mul_add, add_add), woq_linear_silu_mul for a merged
// [gate | up] weight, and `.out` variants of each and of woq_linear and
// dynamic_qlinear, as torch.ops.w4jit.*. Same leading arguments as
// woq_linear; the epilogue runs fused in the kernels' stores.
#ifndef W4JIT_TORCH_EPILOGUE_OPS_H_
#define W4JIT_TORCH_EPILOGUE_OPS_H_

#include <torch/library.h>

namespace w4jit::torch_ext {

void RegisterEpilogueOps(torch::Library& m);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_EPILOGUE_OPS_H_
