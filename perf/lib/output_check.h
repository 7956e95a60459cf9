// Checks a layer's output against the reference definition
// (runtime/reference.h) with the tolerances of docs/numerics.md,
// at sampled rows and columns: the bench runs a kernel at the M it times
// (so the checked code path is the timed one) but the scalar oracle at
// every (m, n) of a large layer would take minutes.
#ifndef W4JIT_PERF_LIB_OUTPUT_CHECK_H_
#define W4JIT_PERF_LIB_OUTPUT_CHECK_H_

#include <cstdint>

#include "absl/status/status.h"
#include "runtime/canonical_weights.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

struct CheckOptions {
  int max_rows = 16;  // all rows up to this, else first, last and spread
  int max_cols = 96;  // the first and last 16 columns and a spread between
};

// OK, or an error naming the first wrong y[m, n] and how many were wrong.
absl::Status CheckLayerOutput(const LayerDesc& desc,
                              const internal::CanonicalWeights& w, int64_t m,
                              const void* x, int64_t ldx, const void* y,
                              int64_t ldy, const CheckOptions& options = {});

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_OUTPUT_CHECK_H_
