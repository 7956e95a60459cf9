// Public value types that describe an int4 linear layer and its weights.
//
// A layer computes y[M,N] = x[M,K] * W[N,K]^T (+ bias[N]) with W stored as
// 4-bit integers plus one scale (and, for u4, one zero point) per group of
// `group_size` consecutive k in each output channel. See
// shared/design/numerics.md for the exact arithmetic.
#ifndef W4JIT_TYPES_HPP_
#define W4JIT_TYPES_HPP_

#include <cstdint>
#include <string>

namespace w4jit {

// Element types that appear at the API boundary.
enum class DType : int { kF32 = 0, kBF16 = 1, kF16 = 2 };

// s4: signed nibbles in [-8, 7], no zero points (vLLM "uint4b8").
// u4: unsigned nibbles in [0, 15] with a zero point per group and column.
enum class WeightType : int { kS4 = 0, kU4 = 1 };

// kW4A16: activations stay bf16/f32, weights are decoded on the fly.
// kDA8W4: activations are quantized per row to int8 at run time.
enum class Mode : int { kW4A16 = 0, kDA8W4 = 1 };

// Checkpoint layouts the library can import (shared/design/formats.md).
enum class WeightFormat : int {
  // int8 [N, K], one value per element (s4 in [-8,7], or u4 in [0,15]).
  // Scales and zero points are [G, N] or [N, G], see WeightsView::groups_major.
  kUnpackedInt8 = 0,
  // zentorch repacked int32 [N, K/8]; nibble k%8 of word (n, k/8) is a
  // two's-complement s4 value. Scales/zero points as for kUnpackedInt8.
  kZentorchInt32 = 1,
  // compressed-tensors pack_quantized: weight_packed int32 [N, K/8] storing
  // q+8, weight_scale [N, G], weight_zero_point int32 [N/8, G] storing zp+8.
  kCompressedTensors = 2,
  // AutoGPTQ v1: qweight int32 [K/8, N], qzeros int32 [G, N/8] storing
  // zero-1, scales [G, N], optional g_idx int32 [K].
  kGptqV1 = 3,
  // GPTQ v2: as v1 but qzeros store the zero as is.
  kGptqV2 = 4,
  // AutoAWQ GEMM: qweight int32 [K, N/8] with nibble order
  // [0,4,1,5,2,6,3,7], qzeros int32 [G, N/8] same interleave, scales [G, N].
  kAwqGemm = 5,
};

// Everything about a layer that is fixed at creation time.
struct LayerDesc {
  int64_t n = 0;            // output channels
  int64_t k = 0;            // input channels
  int64_t group_size = -1;  // -1: one group over all of K (per-channel)
  WeightType weight_type = WeightType::kS4;
  DType scale_dtype = DType::kF32;
  DType act_dtype = DType::kBF16;  // x: bf16 or f32
  DType out_dtype = DType::kBF16;  // y: bf16 or f32
  Mode mode = Mode::kW4A16;
  bool has_bias = false;
  DType bias_dtype = DType::kF32;  // f32 or bf16
  // W4A16 with f32 activations computes in f32 unless this is set, which
  // allows the bf16-dot flavour to round x to bf16.
  bool allow_bf16_compute = false;

  // Groups along K: K / group_size, or 1 for per-channel.
  int64_t groups() const {
    return group_size == -1 ? 1 : (group_size > 0 ? k / group_size : 0);
  }
  // The group length actually used: K for per-channel.
  int64_t effective_group_size() const {
    return group_size == -1 ? k : group_size;
  }
};

// Non-owning pointers to a checkpoint's tensors, as the checkpoint stores
// them. The library copies and repacks at layer creation and never writes
// through these pointers.
struct WeightsView {
  WeightFormat format = WeightFormat::kUnpackedInt8;
  const void* qweight = nullptr;      // layout depends on `format`
  const void* scales = nullptr;       // dtype LayerDesc::scale_dtype
  const void* zero_points = nullptr;  // u4 only; layout depends on `format`
  // [K] group of each input channel, optional; any order with group_size
  // channels per group (GPTQ act-order). Not for kAwqGemm.
  const int32_t* g_idx = nullptr;
  const void* bias = nullptr;         // [N], LayerDesc::bias_dtype
  // For kUnpackedInt8 and kZentorchInt32 only: true if scales and zero
  // points are [G, N] (group-major), false if [N, G].
  bool groups_major = true;
};

// Human-readable names, used in error messages and `w4jit info`.
const char* ToString(DType t);
const char* ToString(WeightType t);
const char* ToString(Mode m);
const char* ToString(WeightFormat f);

}  // namespace w4jit

#endif  // W4JIT_TYPES_HPP_
