// How far a layer's outputs are from exact arithmetic on the same int4
// weights, on activations with outlier channels (as LLM activations have):
// what the DA8W4 activation-quantization choice (per token or per group)
// costs in accuracy. Shared by the tests and `w4jit bench`'s accuracy
// section, so no GoogleTest here.
#ifndef W4JIT_CHECK_ACCURACY_H_
#define W4JIT_CHECK_ACCURACY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "w4jit/layer.hpp"
#include "w4jit/types.hpp"

namespace w4jit::check {

// Activations with outliers: an m x ldx buffer of desc.act_dtype (raw
// bytes), every element drawn from N(0, 1), then `outliers` channels (of
// K, drawn at random once, the same for every row) multiplied by `scale`;
// rounded to bf16 for bf16 activations. Columns [K, ldx) hold 0.
struct OutlierSpec {
  int outliers = 8;
  float scale = 50.0f;
};
std::vector<uint8_t> OutlierActivations(const LayerDesc& desc, int64_t m,
                                        int64_t ldx, const OutlierSpec& spec,
                                        uint32_t seed);

// sqrt(sum (got - want)^2 / sum want^2) over all elements; `got` is
// desc.out_dtype bytes of want.size() elements. 0 for an all-zero `want`
// matched exactly, infinity for a non-finite `got`.
double RelativeL2Error(DType out_dtype, const void* got,
                       const std::vector<double>& want);

// Runs `layer` (made from `w`, no epilogue) on x (m rows, ldx apart) and
// returns the relative L2 error of its outputs against DequantMatmulF64
// (float64 with x as given and the same int4 weights).
absl::StatusOr<double> LayerRelativeError(const Layer& layer,
                                          const internal::CanonicalWeights& w,
                                          int64_t m, const void* x,
                                          int64_t ldx);

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_ACCURACY_H_
