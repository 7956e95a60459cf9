// Finding non-finite activations (NaN, +-Inf) for the layers'
// NonFinitePolicy (w4jit/types.hpp), and the NaN rows kPropagate writes.
#ifndef W4JIT_RUNTIME_NON_FINITE_H_
#define W4JIT_RUNTIME_NON_FINITE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// `policy` is kError or kPropagate; else an error naming `what` and the
// number.
absl::Status ValidateNonFinitePolicy(const char* what, NonFinitePolicy policy);

// Whether the n elements of `row` (bf16 or f32) are all finite.
bool RowIsFinite(DType dtype, const void* row, int64_t n);

// OK if x[i, 0..n) is finite for every i < m (rows ldx elements apart);
// else INVALID_ARGUMENT naming the first bad element, e.g.
// "x[2, 17] = nan is not finite (non_finite = error)".
absl::Status CheckFinite(DType dtype, int64_t m, const void* x, int64_t ldx,
                         int64_t n);

// y[0..n) = quiet NaN, in bf16 or f32.
void FillNaN(DType dtype, void* y, int64_t n);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_NON_FINITE_H_
