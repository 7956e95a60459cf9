// A prepared int4 mixture-of-experts layer (top-k routed gated MLP
// experts): the experts' weights are imported and repacked once at
// creation; Run() may then be called from any thread, concurrently.
//
//   y[t] = sum_j w[t, j] * down_e(act(gate_e(x[t])) * up_e(x[t])),
//   e = topk_ids[t, j], j in [0, k)
//
// w13 is an expert's merged [gate | up] projection (2I x H, gate rows
// first), w2 its down projection (H x I). Only the experts some token
// selects are run, each on the rows routed to it.
//
// With Activation::kSwigluOai (gpt-oss) w13's rows are interleaved as
// vLLM and zentorch store them, gate i in row 2i and up i in row 2i + 1,
// and the pair gives act(g, u) = g' * sigmoid(alpha * g') * (u' + 1) with
// g' = min(g, limit), u' = clamp(u, -limit, limit) (MoeDesc::swiglu_alpha,
// swiglu_limit), in place of act(g) * u.
#ifndef W4JIT_MOE_HPP_
#define W4JIT_MOE_HPP_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "w4jit/types.hpp"

namespace w4jit {

namespace internal {
class MoeExperts;
}  // namespace internal

// Everything about a MoE layer that is fixed at creation time.
struct MoeDesc {
  int64_t experts = 0;       // E
  int64_t hidden = 0;        // H: x and y columns, K of w13, N of w2
  int64_t intermediate = 0;  // I: w13 has 2I rows, w2 has K = I
  // Group size of both projections (-1: per channel).
  int64_t group_size = 128;
  WeightType weight_type = WeightType::kS4;
  DType scale_dtype = DType::kBF16;
  DType act_dtype = DType::kBF16;  // x: bf16 or f32
  DType out_dtype = DType::kBF16;  // y: bf16 or f32
  Mode mode = Mode::kW4A16;
  // DA8W4 activation scales of both projections' inputs (x and the
  // intermediate), as LayerDesc::act_quant: per token or per group.
  ActQuant act_quant = ActQuant::kPerToken;
  // The gate's function: kSilu (SwiGLU), kGeluTanh or kGeluErf (GeGLU),
  // or kSwigluOai (gpt-oss: interleaved w13 rows, see above).
  Activation activation = Activation::kSilu;
  // kSwigluOai's constants, gpt-oss's by default: alpha finite, limit
  // finite and > 0. Not read for the other activations.
  float swiglu_alpha = 1.702f;
  float swiglu_limit = 7.0f;
  bool has_w13_bias = false;  // [2I] per expert
  bool has_w2_bias = false;   // [H] per expert
  DType bias_dtype = DType::kF32;
  // As LayerDesc::allow_bf16_compute (W4A16 with f32 x): x may be rounded
  // to bf16. In W4A16 with bf16 x or this flag, the intermediate between
  // the projections is stored in bf16 (rounded to nearest even from the
  // f32 gate), as a bf16 host stores it, at every row count; else in f32.
  bool allow_bf16_compute = false;
  // Bad input to Run (w4jit/types.hpp, NonFinitePolicy): a non-finite
  // routing weight, NaN / Inf in x, an expert id outside [0, E). kError
  // (default) returns an error naming the first; kPropagate gives each
  // such token an all-NaN row of y and computes the others as if it were
  // absent (a host's warm-up with garbage activations: vLLM's compiled
  // mode).
  NonFinitePolicy non_finite = NonFinitePolicy::kError;
};

// The experts' checkpoint tensors: w13[e] and w2[e] for e in [0, E), each
// a WeightsView of one expert's tensors in any supported format (w13: N =
// 2I, K = H; w2: N = H, K = I). Stacked [E, ...] tensors, as vLLM and
// compressed-tensors store them, become per-expert views with
// StackedExperts().
struct MoeWeights {
  std::vector<WeightsView> w13;
  std::vector<WeightsView> w2;
};

// Distances between consecutive experts of stacked tensors, in bytes
// (g_idx: in int32 elements). A zero stride for a pointer that is null
// (no zero points, no bias) is fine.
struct ExpertStrides {
  int64_t qweight = 0;
  int64_t scales = 0;
  int64_t zero_points = 0;
  int64_t bias = 0;
  int64_t g_idx = 0;
};

// The views of `experts` stacked experts whose expert 0 is `first`.
std::vector<WeightsView> StackedExperts(const WeightsView& first,
                                        const ExpertStrides& strides,
                                        int64_t experts);

struct MoeOptions {
  // Use the portable reference kernels even if JIT kernels could run.
  bool force_reference = false;
};

// Per-call switches of MoeLayer::Run.
struct MoeRunOptions {
  // y[t] += the layer's result (in f32, then rounded to out_dtype) instead
  // of y[t] = it.
  bool accumulate = false;
  // Every routing weight is 1 (vLLM's skip_weighted / apply_router_weight
  // on the input); topk_weights is then not read and may be null.
  bool unweighted = false;
  // This call's policy for bad input in place of MoeDesc::non_finite.
  std::optional<NonFinitePolicy> non_finite;
};

class MoeLayer {
 public:
  // Validates `desc` and every expert's weights (errors name the expert
  // and the projection), imports and packs them.
  static absl::StatusOr<std::unique_ptr<MoeLayer>> Create(
      const MoeDesc& desc, const MoeWeights& weights,
      const MoeOptions& options = {});

  ~MoeLayer();
  MoeLayer(const MoeLayer&) = delete;
  MoeLayer& operator=(const MoeLayer&) = delete;

  // For t tokens: x [t, H] (rows ldx >= H elements apart, act_dtype),
  // topk_ids [t, k] int32 and topk_weights [t, k] f32 (rows k apart),
  // y [t, H] (rows ldy >= H apart, out_dtype). Only y[i, 0..H) is
  // written. k < 1, a null pointer or a bad stride is an error that names
  // it, and then nothing is written. Bad input, by the policy in force
  // (MoeRunOptions::non_finite, else MoeDesc::non_finite):
  //   kError: an expert id outside [0, E) ("topk_ids[1, 0] = 12 is not an
  //     expert id in [0, 8)"), a non-finite routing weight
  //     ("topk_weights[2, 1] = nan is not finite"), or NaN / Inf in x
  //     ("x[3, 17] = inf is not finite") is an error naming the first such
  //     slot or element (ids and weights are checked before x), and
  //     nothing is written.
  //   kPropagate: a token with any of these gets y[t, 0..H) = NaN (also
  //     with accumulate); its slots are skipped, so a bad id is never used
  //     to address weights, and the other tokens' rows are those of a call
  //     without it. No error.
  // t = 0 is an empty batch (nothing read or written). The result does
  // not depend on the thread count or backend.
  absl::Status Run(int64_t t, const void* x, int64_t ldx,
                   const int32_t* topk_ids, const float* topk_weights,
                   int64_t k, void* y, int64_t ldy,
                   const MoeRunOptions& options = {}) const;

  const MoeDesc& desc() const { return desc_; }
  // Bytes of packed weights, scales, zero points and biases held.
  size_t packed_bytes() const;
  // Packed bytes of one expert (both projections): what a token's visit
  // to it streams.
  size_t expert_packed_bytes() const;
  // The kernels the experts run (distinct names).
  std::vector<std::string> kernel_names() const;
  // What an expert computes with when `rows` tokens are routed to it
  // (Layer::compute_at: the tiles may take many rows, the vector kernels
  // few).
  LayerCompute compute_at(int64_t rows) const;

 private:
  MoeLayer(const MoeDesc& desc, std::unique_ptr<internal::MoeExperts> e);
  MoeDesc desc_;
  std::unique_ptr<internal::MoeExperts> experts_;
};

}  // namespace w4jit

#endif  // W4JIT_MOE_HPP_
