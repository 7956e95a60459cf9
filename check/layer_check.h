// Random layers and activations, and a checker that runs a Layer and
// compares every output with the reference within the tolerances of
// docs/numerics.md. Shared by the test suite (tests/util) and
// `w4jit selftest`, so no GoogleTest here.
#ifndef W4JIT_CHECK_LAYER_CHECK_H_
#define W4JIT_CHECK_LAYER_CHECK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "runtime/reference.h"
#include "w4jit/layer.hpp"
#include "w4jit/types.hpp"

namespace w4jit::check {

// Every checkpoint format, for loops over all of them.
inline constexpr WeightFormat kAllFormats[] = {
    WeightFormat::kUnpackedInt8,
    WeightFormat::kZentorchInt32,
    WeightFormat::kCompressedTensors,
    WeightFormat::kGptqV1,
    WeightFormat::kGptqV2,
    WeightFormat::kAwqGemm,
};
// Not in kAllFormats: WeightFormat::kTinygemmInt4Pack, which holds only u4
// layers with float zero points and N % 64 == 0.

// Random canonical weights for `desc` (which must be valid): nibbles
// uniform in [0, 15]; s4 zero points all 8, u4 zero points uniform in
// [0, 15] (float zero-point domain: zero points 8 and float ones of both
// signs with magnitudes in [2^-8, 2^-1), exact in desc.zero_point_dtype);
// scales of both signs with magnitudes in [2^-8, 2^-4), exactly
// representable in desc.scale_dtype; bias (if desc.has_bias) in (-2, 2),
// exactly representable in desc.bias_dtype.
internal::CanonicalWeights RandomWeights(const LayerDesc& desc, uint32_t seed);

// A random GPTQ act-order permutation for CanonicalWeights::k_perm, in the
// form the importer produces from a g_idx: K's channels dealt to the groups
// at random, each group's channels in increasing order.
std::vector<int32_t> RandomActOrder(const LayerDesc& desc, uint32_t seed);

// An m x ldx buffer of desc.act_dtype as raw bytes: columns [0, K) hold
// values drawn from N(0, 1) (rounded to bf16 for bf16 activations),
// columns [K, ldx) hold NaN so that a kernel reading past K poisons its
// output and fails the check.
std::vector<uint8_t> RandomActivations(const LayerDesc& desc, int64_t m,
                                       int64_t ldx, uint32_t seed);

// Sets x[row, col] (dtype act_dtype) to v (rounded to nearest even for
// bf16). For hand-made edge cases.
void SetActivation(const LayerDesc& desc, std::vector<uint8_t>* x, int64_t ldx,
                   int64_t row, int64_t col, float v);

// Exports `w` as unpacked int8 and creates the layer from it.
absl::StatusOr<std::unique_ptr<Layer>> MakeLayer(
    const LayerDesc& desc, const internal::CanonicalWeights& w,
    const LayerOptions& options = {});

// The reference result for element (i, j) in f32 (before the output
// dtype) and the magnitude T of its terms that scales the tolerance:
//   DA8W4: T = |sa| * sum_g |s[g,j] * acc_g| + |bias|   (per token)
//          T = sum_g |sa_g * s[g,j] * acc_g| + |bias|  (per group)
//   W4A16: T = sum_g W4a16GroupMagnitude(g) + |bias|
//          (check/w4a16_magnitude.h: per group, the larger of
//          |s| * sum |(u - z) * x| + |zc| * sum |x|, the zero-point
//          correction a kernel may fold out, and the terms of the f32 int4
//          kernel's byte decode)
struct Expected {
  float value;
  double magnitude;
};
// One row of expectations for all N columns.
std::vector<Expected> ExpectedRow(const LayerDesc& desc,
                                  const internal::CanonicalWeights& w,
                                  const void* x_row);

// The expectation for column j alone (for checkers that sample columns).
// `x_row` is already read through the act-order permutation
// (internal::ActOrderRow); for DA8W4 `q` is its reference quantization
// (internal::QuantizeRowRef), unused for W4A16; `acc` is scratch of
// w.groups elements.
Expected ExpectedAt(const LayerDesc& desc, const internal::CanonicalWeights& w,
                    const void* x_row, const internal::QuantizedRow& q,
                    int64_t j, int32_t* acc);

// Allowed |got - want| for an output whose reference is `e`:
//   1e-5 * T + 1e-6, plus one bf16 ulp of |want| for bf16 outputs, plus
//   2^-8 * T for W4A16 with f32 activations and allow_bf16_compute (the
//   kernel may round x to bf16: relative error 2^-9 per term).
double Tolerance(const LayerDesc& desc, const Expected& e);

// Operands of a layer's binary post-ops (LayerDesc::epilogue): operand i
// is m x ld[i] in epilogue.binary[i].dtype, values in [-2, 2) in columns
// [0, N_out), NaN in the padding (a kernel reading it poisons its output).
struct EpilogueOperands {
  std::vector<uint8_t> data[2];
  int64_t ld[2] = {0, 0};
  EpilogueInputs inputs() const;
};
// ld[i] = N_out + pad + 2 i.
EpilogueOperands RandomEpilogueOperands(const LayerDesc& desc, int64_t m,
                                        int64_t pad, uint32_t seed);

// The reference value of output (i, j < N_out) of a layer with an
// epilogue, from the pre-epilogue expectations `t` of row i (ExpectedRow),
// and its tolerance: the numerics tolerance of t carried through the
// epilogue (slope of the activation <= 1.13, |operand| for mul, both
// halves for silu_mul) plus kEpilogueRelErr relative for the activation
// and f32 roundings, plus one bf16 ulp for bf16 outputs.
inline constexpr double kEpilogueRelErr = 2e-6;
struct EpilogueExpectation {
  double value;
  double tolerance;
};
EpilogueExpectation ExpectEpilogue(const LayerDesc& desc,
                                   const std::vector<Expected>& t,
                                   const EpilogueOperands& ops, int64_t i,
                                   int64_t j);

// What CheckRun found.
struct CheckResult {
  bool ran = false;        // Run() returned OK
  int64_t bad = 0;         // outputs out of tolerance, unwritten, or
                           // padding / guard elements overwritten
  std::string report;      // the first mismatches, one per line
  double worst_ratio = 0;  // max |got - want| / tolerance over finite outputs
  bool ok() const { return ran && bad == 0; }
};

// Runs `layer` on x (m rows, ldx apart) into a fresh y of m * ldy elements
// with guard regions before and after, all pre-filled with a signalling-NaN
// sentinel, and checks:
//   - every y[i, j < N] is within Tolerance of the reference (NaN expected
//     iff NaN produced, infinities equal) and was written;
//   - y[i, N <= j < ldy] and the guards still hold the sentinel.
// `w` must be the weights the layer was made from. With `y_out`, y is the
// caller's buffer of exactly m * ldy elements instead (e.g. flush against
// PROT_NONE pages), and there are no guard elements.
// A layer with an epilogue: y has N_out columns, `ops` holds its binary
// operands (required when it has any) and every output is checked against
// ExpectEpilogue.
CheckResult CheckRun(const Layer& layer, const internal::CanonicalWeights& w,
                     int64_t m, const void* x, int64_t ldx, int64_t ldy,
                     void* y_out = nullptr,
                     const EpilogueOperands* ops = nullptr);

// Runs `layer` into a plain m x ldy f32 buffer of its results widened to
// f32 (y of desc.out_dtype); for comparing two layers bit for bit.
absl::StatusOr<std::vector<float>> RunToF32(const Layer& layer, int64_t m,
                                            const std::vector<uint8_t>& x,
                                            int64_t ldx);

// f64 oracle: dequantize W to (u - z) * s (float zero points: (u - 8) * s
// + zf) in f64 (Numerics::kZentorch: that weight in f32 rounded to bf16, as
// zentorch computes it) and multiply with x
// widened to f64 (column j of W with x[w.k_perm[j]] under act-order), plus
// bias. [m x N], row-major.
std::vector<double> DequantMatmulF64(const LayerDesc& desc,
                                     const internal::CanonicalWeights& w,
                                     int64_t m, const void* x, int64_t ldx);

// "n=64 k=128 g=32 u4 w4a16 act=bf16 out=f32 scale=f16 bias=bf16".
std::string Describe(const LayerDesc& desc);

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_LAYER_CHECK_H_
