// Shared test utilities: random layers and activations, and a checker that
// runs a Layer and compares every output with the reference within the
// tolerances of docs/numerics.md. Every kernel test uses these.
//
// Typical use:
//   LayerDesc desc = ...;
//   auto w = RandomWeights(desc, /*seed=*/1);
//   auto layer = MakeLayer(desc, w);            // ASSERT_TRUE(layer.ok())
//   auto x = RandomActivations(desc, m, ldx, /*seed=*/2);
//   EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy));
#ifndef W4JIT_TESTS_UTIL_TEST_LAYER_H_
#define W4JIT_TESTS_UTIL_TEST_LAYER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "check/layer_check.h"
#include "gtest/gtest.h"
#include "runtime/canonical_weights.h"
#include "w4jit/layer.hpp"
#include "w4jit/types.hpp"

namespace w4jit::testing {

// The gtest-free helpers live in check/layer_check.h (shared with
// `w4jit selftest`); tests name them unqualified.
using check::DequantMatmulF64;
using check::Describe;
using check::Expected;
using check::ExpectedRow;
using check::kAllFormats;
using check::MakeLayer;
using check::RandomActivations;
using check::RandomActOrder;
using check::RandomWeights;
using check::RunToF32;
using check::SetActivation;
using check::Tolerance;

// A layer for kernel tests: bf16 scales, f32 bias (if any), the rest as
// given.
LayerDesc KernelTestDesc(Mode mode, int64_t n, int64_t k, int64_t group_size,
                         WeightType weight_type, DType act, DType out,
                         bool bias);

// Runs `layer` on x (m rows, ldx apart) into a fresh y of m * ldy elements
// with guard regions before and after, all pre-filled with a signalling-NaN
// sentinel, and checks:
//   - every y[i, j < N] is within Tolerance of the reference (NaN expected
//     iff NaN produced, infinities equal) and was written;
//   - y[i, N <= j < ldy] and the guards still hold the sentinel.
// The failure message names (row, col, got, want, tolerance) of the first
// mismatches.
::testing::AssertionResult RunAndCheck(const Layer& layer,
                                       const internal::CanonicalWeights& w,
                                       int64_t m, const std::vector<uint8_t>& x,
                                       int64_t ldx, int64_t ldy);

}  // namespace w4jit::testing

#endif  // W4JIT_TESTS_UTIL_TEST_LAYER_H_
