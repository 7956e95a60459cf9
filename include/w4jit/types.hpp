// Public value types that describe an int4 linear layer and its weights.
//
// A layer computes y[M,N] = x[M,K] * W[N,K]^T (+ bias[N]) with W stored as
// 4-bit integers plus one scale (and, for u4, one zero point) per group of
// `group_size` consecutive k in each output channel. See
// docs/numerics.md for the exact arithmetic.
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

// How DA8W4 quantizes x (docs/numerics.md), fixed at creation:
// kPerToken: one symmetric int8 scale per row, max|x[m, :]| / 127.
// kPerGroup: one per row and weight group, max|x[m, g]| / 127 over the
//   group's K entries (after the act-order permutation); the group end
//   applies sa[m, g] * s[g, n]. Far more accurate when a few channels of x
//   are outliers (README "What it computes"); with one group over K
//   (per-channel weights) it is the same quantization as kPerToken and the
//   layer runs the per-token kernels. W4A16 layers take kPerToken only.
enum class ActQuant : int { kPerToken = 0, kPerGroup = 1 };

// What a W4A16 layer's dot products multiply x with
// (docs/numerics-zentorch.md):
//   kExact:    the dequantized weight (u - z) * s exactly (docs/numerics.md).
//   kZentorch: that weight rounded to bf16 (round to nearest even) first, as
//              zentorch / AOCL-DLP compute it, so that results (and
//              zentorch's own tests, whose reference rounds it so) match
//              theirs. y is then sum_k bf16((u - z) * s) * x[k] (float zero
//              points: bf16((u - 8) * s + zf)), accumulated in f32. The
//              kernels dequantize to a panel at every M for it (slower at
//              small M; docs/numerics-zentorch.md has the cost). W4A16 only:
//              DA8W4 has no dequantized weight (its int8 x int4 products are
//              exact in both libraries). The epilogue is the same in both
//              (t unrounded until the store, as zentorch's fused post-ops
//              compute it). W4JIT_NUMERICS=zentorch makes
//              it the default of the torch ops and w4jit.Linear
//              (w4jit/layer.hpp's NumericsFromEnvironment).
enum class Numerics : int { kExact = 0, kZentorch = 1 };

// What a layer does with non-finite input (NaN or +-Inf in x, and in a
// MoE layer also in the routing weights, or an expert id outside [0, E)),
// docs/numerics.md "Bad values":
//   kError:     Run returns INVALID_ARGUMENT naming the first bad value
//               (row, column or slot, and the value) and writes nothing.
//               Checking x costs one read of it per call.
//   kPropagate: no error; every output row of a token with bad input is
//               non-finite (a MoE layer makes it all NaN), the other rows
//               are computed as if it were absent. Nothing is read outside
//               the weights or written outside the output. This is what
//               a host's warm-up with garbage activations needs (vLLM's
//               own kernels compute garbage there and carry on).
// LayerDesc::non_finite defaults to kPropagate (what the kernels have
// always done), MoeDesc::non_finite to kError (routing has always been
// checked); both can be overridden per call (LayerRunOptions,
// MoeRunOptions).
enum class NonFinitePolicy : int { kError = 0, kPropagate = 1 };

// Checkpoint layouts the library can import (docs/formats.md).
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
  // torch's CPU int4pack, as torchao's int4 weight-only ("tinygemm")
  // checkpoints hold it (torch._convert_weight_to_int4pack_for_cpu at
  // torch's AVX512 capability): uint8 [N, K/2], N a multiple of 16; rows in
  // blocks of 64, per block and k 32 bytes: byte d (0..15) holds row d in
  // its low nibble and row d + 32 in its high one, byte 16 + d rows d + 16
  // and d + 48; a last block of N % 64 rows holds adjacent rows per byte.
  // (torch's AVX2 and DEFAULT layouts: docs/formats.md, through the torch
  // op woq_repack_from_int4pack.) Values u in [0, 15]. u4 layers with float
  // zero points only: scales and zero points [G, N] (torchao's
  // scales_and_zeros[..., 0] and [..., 1]).
  kTinygemmInt4Pack = 6,
};

// What a u4 layer's zero points mean (docs/numerics.md):
// kInteger: int8 z in [0, 15], w = (u - z) * s (GPTQ, AWQ, zentorch).
// kFloat:   z is a float (LayerDesc::zero_point_dtype, bf16 or f32),
//           w = (u - 8) * s + z, torchao's int4 weight-only ("tinygemm")
//           form; W4A16 only.
enum class ZeroPointDomain : int { kInteger = 0, kFloat = 1 };

// Activation applied to t = x W^T (+ bias), in f32, before the binary
// post-ops and the conversion to the output dtype. Exact definitions (and
// the accuracy of the JIT kernels' vector forms) in docs/epilogues.md:
//   relu(t) = max(t, 0)                sigmoid(t) = 1 / (1 + exp(-t))
//   silu(t) = t * sigmoid(t)           gelu_erf(t) = t/2 (1 + erf(t / sqrt 2))
//   gelu_tanh(t) = t/2 (1 + tanh(sqrt(2/pi) (t + 0.044715 t^3)))
enum class Activation : int {
  kNone = 0,
  kRelu = 1,
  kSigmoid = 2,
  kGeluTanh = 3,
  kGeluErf = 4,
  kSilu = 5,
  // gpt-oss's gate (silu_mul gates only, never a plain activation): with
  // g the gate and u the up value of a column,
  //   g <- min(g, limit), u <- clamp(u, -limit, limit),
  //   v = g * sigmoid(alpha * g) * (u + 1)
  // (Epilogue::gate_alpha and gate_limit; gpt-oss: 1.702 and 7).
  kSwigluOai = 6,
};

// A binary post-op with an [M, N_out] operand given at Run time.
enum class BinaryOp : int { kMul = 0, kAdd = 1 };

struct BinaryPostOp {
  BinaryOp op = BinaryOp::kAdd;
  DType dtype = DType::kBF16;  // of the operand: bf16 or f32
};

// What the layer does to t = x W^T (+ bias) before storing y, fixed at
// creation so that the kernels are specialised for it:
//   v = silu_mul ? gate(t[:, j]) * t[:, N/2 + j]   (j < N/2)
//                : activation(t[:, j])             (j < N)
// where gate = silu when activation is kNone (or kSilu), else activation
// (gelu_tanh / gelu_erf for GeGLU-style MLPs); with kSwigluOai the pair
// is gpt-oss's clamped gate (see Activation::kSwigluOai).
//   v = v op_0 a_0[:, j]          (if num_binary >= 1)
//   v = v op_1 a_1[:, j]          (if num_binary == 2)
//   y[:, j] = v in out_dtype
// in f32, each step rounded to f32 (v is rounded to the output dtype only
// when stored, as zentorch's own fused kernels do). zentorch's post-ops are
//   woq_linear_relu / _sigmoid / _gelu_tanh / _gelu_erf: activation only;
//   woq_linear_add(a):        {kAdd}            y = t + a
//   woq_linear_mul_add(m, a): {kMul, kAdd}      y = t * m + a
//   woq_linear_add_add(a, b): {kAdd, kAdd}      y = t + a + b
// silu_mul is the merged [gate | up] projection of a gated MLP: the layer
// has N = 2I weight rows (gate rows first) and y has N_out = I columns.
// The operands a_i (pointers and leading dimensions) are given to Run
// (EpilogueInputs); they are [M, N_out] in their dtype, never written.
struct Epilogue {
  Activation activation = Activation::kNone;
  int num_binary = 0;  // 0, 1 or 2
  BinaryPostOp binary[2];
  bool silu_mul = false;  // requires N even; see gate_activation()
  // The constants of a kSwigluOai gate (read for no other activation).
  float gate_alpha = 1.702f;
  float gate_limit = 7.0f;

  // With silu_mul: the function applied to the gate half.
  Activation gate_activation() const {
    return activation == Activation::kNone ? Activation::kSilu : activation;
  }
  bool empty() const {
    return activation == Activation::kNone && num_binary == 0 && !silu_mul;
  }
};

// Everything about a layer that is fixed at creation time.
struct LayerDesc {
  int64_t n = 0;            // output channels
  int64_t k = 0;            // input channels
  int64_t group_size = -1;  // -1: one group over all of K (per-channel)
  WeightType weight_type = WeightType::kS4;
  DType scale_dtype = DType::kF32;
  // u4 only: integer zero points, or float ones of zero_point_dtype (bf16
  // or f32) with w = (u - 8) * s + z.
  ZeroPointDomain zero_point_domain = ZeroPointDomain::kInteger;
  DType zero_point_dtype = DType::kBF16;  // kFloat domain only
  DType act_dtype = DType::kBF16;         // x: bf16 or f32
  DType out_dtype = DType::kBF16;         // y: bf16 or f32
  Mode mode = Mode::kW4A16;
  bool has_bias = false;
  DType bias_dtype = DType::kF32;  // f32 or bf16
  // W4A16 with f32 activations computes in f32 unless this is set, which
  // allows the bf16-dot flavour to round x to bf16.
  bool allow_bf16_compute = false;
  // Fused post-ops (default: none, y = t).
  Epilogue epilogue;
  // DA8W4 activation scales: per token (default) or per weight group.
  ActQuant act_quant = ActQuant::kPerToken;
  // W4A16: exact (default) or zentorch-compatible numerics (above).
  Numerics numerics = Numerics::kExact;
  // NaN / Inf in x: the row's output is non-finite (default, as the kernels
  // compute it), or an error (NonFinitePolicy).
  NonFinitePolicy non_finite = NonFinitePolicy::kPropagate;

  // Columns of y: N, or N / 2 with epilogue.silu_mul.
  int64_t out_n() const { return epilogue.silu_mul ? n / 2 : n; }
  // Groups along K: K / group_size, or 1 for per-channel.
  int64_t groups() const {
    return group_size == -1 ? 1 : (group_size > 0 ? k / group_size : 0);
  }
  // The group length actually used: K for per-channel.
  int64_t effective_group_size() const {
    return group_size == -1 ? k : group_size;
  }
  // Whether x gets a scale per (row, group): kPerGroup with more than one
  // group (with one group per-group and per-token scales are the same).
  bool act_per_group() const {
    return act_quant == ActQuant::kPerGroup && groups() > 1;
  }
};

// Non-owning pointers to a checkpoint's tensors, as the checkpoint stores
// them. The library copies and repacks at layer creation and never writes
// through these pointers.
struct WeightsView {
  WeightFormat format = WeightFormat::kUnpackedInt8;
  const void* qweight = nullptr;  // layout depends on `format`
  const void* scales = nullptr;   // dtype LayerDesc::scale_dtype
  // u4 only; layout depends on `format`; int8 (or packed) in the integer
  // domain, LayerDesc::zero_point_dtype in the float one.
  const void* zero_points = nullptr;
  // [K] group of each input channel, optional; any order with group_size
  // channels per group (GPTQ act-order). Not for kAwqGemm.
  const int32_t* g_idx = nullptr;
  const void* bias = nullptr;  // [N], LayerDesc::bias_dtype
  // For kUnpackedInt8 and kZentorchInt32 only: true if scales and zero
  // points are [G, N] (group-major), false if [N, G].
  bool groups_major = true;
  // Groups the scales and zero points hold: 0 means the layer's own,
  // LayerDesc::groups(). More is for a K-shard of an act-order checkpoint
  // (row-parallel tensor parallelism, docs/tensor-parallel.md): g_idx [K]
  // names groups of the whole checkpoint, each g_idx[k] < scale_groups,
  // populated unevenly, and the scales stay whole. Only w4jit::Layer takes
  // it (not MoeLayer); it then imports the shard with a smaller group size
  // and zero-weight padding (runtime/formats/act_order.h).
  int64_t scale_groups = 0;
};

// The multiply a layer's kernels are built on at some M
// (Layer::compute_at): the instruction whose peak bounds them where compute
// binds. A benchmark judges a layer against that peak, so it is asked of
// the layer rather than read from its kernel names.
enum class ComputeOp : int {
  kScalar = 0,   // the reference path: portable C++, no JIT kernel
  kF32Fma = 1,   // vfmadd231ps over dequantized f32 weights (W4A16)
  kBf16Dot = 2,  // vdpbf16ps over bf16 weights (W4A16's bf16-dot flavour)
  // u8 x s8 (DA8W4): vpdpbusd with AVX512_VNNI; on AVX2, vpmaddubsw with
  // int16 sums widened per block.
  kInt8Dot = 3,
  kAmxBf16 = 4,  // tdpbf16ps on the AMX tiles (W4A16 from amx_min_m)
  kAmxInt8 = 5,  // tdpbusd on the AMX tiles (DA8W4 from amx_min_m)
};

// What a layer computes with at one M.
struct LayerCompute {
  ComputeOp op = ComputeOp::kScalar;
  // The vector ops' width: 256 (ymm) or 512 (zmm); 0 for the tiles and
  // the reference.
  int vector_bits = 0;
};

// Human-readable names, used in error messages and `w4jit info`.
const char* ToString(DType t);
const char* ToString(WeightType t);
const char* ToString(Mode m);
const char* ToString(ActQuant a);         // "per_token" / "per_group"
const char* ToString(Numerics n);         // "exact" / "zentorch"
const char* ToString(NonFinitePolicy p);  // "error" / "propagate"
const char* ToString(WeightFormat f);
const char* ToString(ZeroPointDomain z);
const char* ToString(Activation a);
const char* ToString(BinaryOp op);
// "scalar", "f32_fma", "bf16_dot", "int8_dot", "amx_bf16", "amx_int8".
const char* ToString(ComputeOp op);

}  // namespace w4jit

#endif  // W4JIT_TYPES_HPP_
