/* w4jit C API: opaque layer handles, an error code plus a message.
 *
 * Compiles as C99. Every function returns W4JIT_OK or an error code; the
 * message of the last error on the calling thread is available from
 * w4jit_last_error(). Enum values match the C++ enums in w4jit/types.hpp. */
#ifndef W4JIT_W4JIT_H_
#define W4JIT_W4JIT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum w4jit_status {
  W4JIT_OK = 0,
  W4JIT_INVALID_ARGUMENT = 1,
  W4JIT_UNIMPLEMENTED = 2,
  W4JIT_RESOURCE_EXHAUSTED = 3,
  W4JIT_INTERNAL = 4,
  W4JIT_FAILED_PRECONDITION = 5 /* e.g. a tuning file of another CPU */
} w4jit_status;

typedef enum w4jit_dtype {
  W4JIT_F32 = 0,
  W4JIT_BF16 = 1,
  W4JIT_F16 = 2
} w4jit_dtype;

typedef enum w4jit_weight_type { W4JIT_S4 = 0, W4JIT_U4 = 1 } w4jit_weight_type;

typedef enum w4jit_mode { W4JIT_W4A16 = 0, W4JIT_DA8W4 = 1 } w4jit_mode;

/* DA8W4 activation scales (w4jit::ActQuant): one per row, or one per row
 * and weight group (more accurate with outlier channels). */
typedef enum w4jit_act_quant {
  W4JIT_ACT_QUANT_PER_TOKEN = 0,
  W4JIT_ACT_QUANT_PER_GROUP = 1
} w4jit_act_quant;

/* W4A16 numerics (w4jit::Numerics): exact, or each dequantized weight
 * rounded to bf16 first, as zentorch / AOCL compute it. */
typedef enum w4jit_numerics {
  W4JIT_NUMERICS_EXACT = 0,
  W4JIT_NUMERICS_ZENTORCH = 1
} w4jit_numerics;

/* Non-finite input (w4jit::NonFinitePolicy, docs/numerics.md): NaN / Inf
 * in x, and for a MoE layer a non-finite routing weight or an expert id
 * outside [0, E). ERROR: the run fails naming the first bad value and
 * writes nothing. PROPAGATE: no error; a bad row of x gives a non-finite
 * row of y (a MoE layer: the bad token's row all NaN, its slots skipped),
 * other rows unaffected. Layers default to PROPAGATE, MoE layers to ERROR
 * (after the desc_init functions). */
typedef enum w4jit_non_finite {
  W4JIT_NON_FINITE_ERROR = 0,
  W4JIT_NON_FINITE_PROPAGATE = 1
} w4jit_non_finite;

typedef enum w4jit_weight_format {
  W4JIT_FORMAT_UNPACKED_INT8 = 0,
  W4JIT_FORMAT_ZENTORCH_INT32 = 1,
  W4JIT_FORMAT_COMPRESSED_TENSORS = 2,
  W4JIT_FORMAT_GPTQ_V1 = 3,
  W4JIT_FORMAT_GPTQ_V2 = 4,
  W4JIT_FORMAT_AWQ_GEMM = 5,
  W4JIT_FORMAT_TINYGEMM_INT4PACK = 6
} w4jit_weight_format;

/* Mirrors w4jit::ZeroPointDomain: integer w = (u - z) * s; float
 * w = (u - 8) * s + z with z in desc.zero_point_dtype (bf16 or f32). */
typedef enum w4jit_zero_point_domain {
  W4JIT_ZP_INTEGER = 0,
  W4JIT_ZP_FLOAT = 1
} w4jit_zero_point_domain;

/* Fused epilogue (mirrors w4jit::Epilogue, see w4jit/types.hpp and
 * docs/epilogues.md): v = silu_mul ? gate(t[:, j]) * t[:, N/2 + j]
 * : activation(t), gate = silu for activation none (or silu), else gelu_tanh
 * or gelu_erf; then v = v op_i a_i for i < num_binary; y = v. */
typedef enum w4jit_activation {
  W4JIT_ACT_NONE = 0,
  W4JIT_ACT_RELU = 1,
  W4JIT_ACT_SIGMOID = 2,
  W4JIT_ACT_GELU_TANH = 3,
  W4JIT_ACT_GELU_ERF = 4,
  W4JIT_ACT_SILU = 5,
  /* gpt-oss's gate, with silu_mul only (w4jit::Activation::kSwigluOai):
   * v = g' sigmoid(1.702 g') (u' + 1), g' = min(g, 7), u' = clamp(u, -7,
   * 7); a MoE desc sets its own alpha and limit. */
  W4JIT_ACT_SWIGLUOAI = 6
} w4jit_activation;

typedef enum w4jit_binary_op {
  W4JIT_BINARY_MUL = 0,
  W4JIT_BINARY_ADD = 1
} w4jit_binary_op;

/* What a layer's kernels multiply with at some M (w4jit::ComputeOp):
 * w4jit_layer_compute_at. */
typedef enum w4jit_compute_op {
  W4JIT_COMPUTE_SCALAR = 0,   /* the reference path */
  W4JIT_COMPUTE_F32_FMA = 1,  /* vfmadd231ps (W4A16) */
  W4JIT_COMPUTE_BF16_DOT = 2, /* vdpbf16ps (W4A16's bf16-dot flavour) */
  W4JIT_COMPUTE_INT8_DOT = 3, /* u8 x s8: vpdpbusd, or AVX2's int16 sums */
  W4JIT_COMPUTE_AMX_BF16 = 4, /* tdpbf16ps on the AMX tiles */
  W4JIT_COMPUTE_AMX_INT8 = 5  /* tdpbusd on the AMX tiles */
} w4jit_compute_op;

typedef struct w4jit_epilogue {
  w4jit_activation activation;
  int num_binary; /* 0, 1 or 2 */
  w4jit_binary_op binary_op[2];
  w4jit_dtype binary_dtype[2]; /* operand dtypes: bf16 or f32 */
  int silu_mul;                /* [gate | up] layer: y has N / 2 columns */
} w4jit_epilogue;

/* Mirrors w4jit::LayerDesc; fill with w4jit_layer_desc_init() first. */
typedef struct w4jit_layer_desc {
  int64_t n;
  int64_t k;
  int64_t group_size; /* -1: per-channel */
  w4jit_weight_type weight_type;
  w4jit_dtype scale_dtype;
  w4jit_dtype act_dtype;
  w4jit_dtype out_dtype;
  w4jit_mode mode;
  int has_bias;
  w4jit_dtype bias_dtype;
  int allow_bf16_compute;
  w4jit_epilogue epilogue;   /* none after w4jit_layer_desc_init() */
  w4jit_act_quant act_quant; /* DA8W4 only; per token after init */
  w4jit_zero_point_domain zero_point_domain; /* integer after init */
  w4jit_dtype zero_point_dtype;              /* float domain: bf16 or f32 */
  w4jit_numerics numerics;                   /* W4A16 only; exact after init */
  w4jit_non_finite non_finite;               /* propagate after init */
} w4jit_layer_desc;

/* Mirrors w4jit::WeightsView. */
typedef struct w4jit_weights {
  w4jit_weight_format format;
  const void* qweight;
  const void* scales;
  const void* zero_points;
  const int32_t* g_idx; /* [K] or NULL; act-order as WeightsView::g_idx */
  const void* bias;
  int groups_major;
} w4jit_weights;

typedef struct w4jit_layer w4jit_layer;

/* Defaults: per-channel s4, f32 scales, bf16 activations and output, W4A16,
 * per-token activation scales. */
void w4jit_layer_desc_init(w4jit_layer_desc* desc);

w4jit_status w4jit_layer_create(const w4jit_layer_desc* desc,
                                const w4jit_weights* weights,
                                w4jit_layer** out_layer);
/* The same for a K-shard of an act-order checkpoint (row-parallel tensor
 * parallelism, docs/tensor-parallel.md): scales and zero points hold
 * scale_groups groups (the whole checkpoint's, more than K / group_size),
 * weights->g_idx is required and each of its K values < scale_groups.
 * scale_groups = 0 (or K / group_size) is w4jit_layer_create. Mirrors
 * WeightsView::scale_groups. */
w4jit_status w4jit_layer_create_with_scale_groups(const w4jit_layer_desc* desc,
                                                  const w4jit_weights* weights,
                                                  int64_t scale_groups,
                                                  w4jit_layer** out_layer);
/* y = x * W^T (+ bias) for m rows, as w4jit::Layer::Run: m = 0 succeeds and
 * touches neither x nor y (both may be NULL then); m < 0 is an error. */
w4jit_status w4jit_layer_run(const w4jit_layer* layer, int64_t m, const void* x,
                             int64_t ldx, void* y, int64_t ldy);
/* The same for a layer whose epilogue has binary post-ops: operand i is
 * [m, N_out] in epilogue.binary_dtype[i], rows ld_i >= N_out apart (N_out
 * = N / 2 with silu_mul, else N; ldy >= N_out). Operands past num_binary
 * must be NULL. */
w4jit_status w4jit_layer_run_epilogue(const w4jit_layer* layer, int64_t m,
                                      const void* x, int64_t ldx, void* y,
                                      int64_t ldy, const void* operand0,
                                      int64_t ld0, const void* operand1,
                                      int64_t ld1);
w4jit_status w4jit_layer_packed_bytes(const w4jit_layer* layer,
                                      size_t* out_bytes);
/* What w4jit_layer_run at M rows computes with (mirrors
 * w4jit::Layer::compute_at): *out_op, and *out_vector_bits 256 or 512 for
 * the vector ops, 0 for the tiles and the reference. out_vector_bits may be
 * NULL. */
w4jit_status w4jit_layer_compute_at(const w4jit_layer* layer, int64_t m,
                                    w4jit_compute_op* out_op,
                                    int* out_vector_bits);
/* Accepts NULL. */
void w4jit_layer_destroy(w4jit_layer* layer);

/* A mixture-of-experts layer (mirrors w4jit::MoeLayer, w4jit/moe.hpp):
 * y[t] = sum_j w[t, j] * down_e(act(gate_e(x[t])) * up_e(x[t])),
 * e = topk_ids[t, j]. Fill the desc with w4jit_moe_desc_init() first. */
typedef struct w4jit_moe_desc {
  int64_t experts;
  int64_t hidden;       /* H: columns of x and y */
  int64_t intermediate; /* I: w13 is [2I, H] per expert, w2 [H, I] */
  int64_t group_size;   /* both projections; -1: per-channel */
  w4jit_weight_type weight_type;
  w4jit_dtype scale_dtype;
  w4jit_dtype act_dtype; /* x: bf16 or f32 */
  w4jit_dtype out_dtype; /* y: bf16 or f32 */
  w4jit_mode mode;
  w4jit_activation activation; /* SILU, GELU_TANH, GELU_ERF or SWIGLUOAI
                                  (w13 rows interleaved: gate i in row 2i,
                                  up i in row 2i + 1) */
  int has_w13_bias;
  int has_w2_bias;
  w4jit_dtype bias_dtype;
  int allow_bf16_compute;
  w4jit_act_quant act_quant; /* DA8W4 only (x and the intermediate); per
                                token after init */
  /* SWIGLUOAI only: g' = min(g, swiglu_limit), u' = clamp(u, -limit,
   * limit), act = g' sigmoid(swiglu_alpha g') (u' + 1); 1.702 and 7 (gpt-oss)
   * after init. */
  float swiglu_alpha;
  float swiglu_limit;
  w4jit_non_finite non_finite; /* error after init */
} w4jit_moe_desc;

/* Bytes between consecutive experts of stacked [E, ...] tensors (g_idx:
 * int32 elements); 0 for a tensor that is absent. */
typedef struct w4jit_expert_strides {
  int64_t qweight;
  int64_t scales;
  int64_t zero_points;
  int64_t bias;
  int64_t g_idx;
} w4jit_expert_strides;

typedef struct w4jit_moe w4jit_moe;

/* Defaults: s4, group 128, bf16 scales, x and y, W4A16, silu, no bias. */
void w4jit_moe_desc_init(w4jit_moe_desc* desc);
/* From stacked tensors: w13 / w2 describe expert 0, the strides the
 * distance to the next expert. */
w4jit_status w4jit_moe_create(const w4jit_moe_desc* desc,
                              const w4jit_weights* w13,
                              const w4jit_expert_strides* w13_strides,
                              const w4jit_weights* w2,
                              const w4jit_expert_strides* w2_strides,
                              w4jit_moe** out_moe);
/* From per-expert tensors: w13[e], w2[e] for e < experts. */
w4jit_status w4jit_moe_create_per_expert(const w4jit_moe_desc* desc,
                                         const w4jit_weights* w13,
                                         const w4jit_weights* w2,
                                         w4jit_moe** out_moe);
/* Flags of w4jit_moe_run. ACCUMULATE: y += result. UNWEIGHTED: every
 * routing weight is 1 and topk_weights may be NULL. */
#define W4JIT_MOE_ACCUMULATE 1
#define W4JIT_MOE_UNWEIGHTED 2
/* x [t, H] (rows ldx apart), topk_ids [t, k] int32, topk_weights [t, k]
 * f32, y [t, H] (rows ldy apart). k < 1 is an error and then y is not
 * written. An id outside [0, E), a non-finite weight or NaN / Inf in x:
 * desc.non_finite (ERROR: an error naming the first, y not written;
 * PROPAGATE: that token's row of y is NaN, its slots skipped). */
w4jit_status w4jit_moe_run(const w4jit_moe* moe, int64_t t, const void* x,
                           int64_t ldx, const int32_t* topk_ids,
                           const float* topk_weights, int64_t k, void* y,
                           int64_t ldy, int flags);
w4jit_status w4jit_moe_packed_bytes(const w4jit_moe* moe, size_t* out_bytes);
/* Accepts NULL. */
void w4jit_moe_destroy(w4jit_moe* moe);

/* 0 restores the default (the CPUs the process may use, not the calling
 * thread's mask; w4jit/parallel.hpp). */
w4jit_status w4jit_set_num_threads(int num_threads);
int w4jit_get_num_threads(void);

/* w4jit's own threading when no host backend is set (see
 * w4jit/parallel.hpp): W4JIT_THREADING_POOL (default) or
 * W4JIT_THREADING_OPENMP. Unimplemented when built without OpenMP;
 * invalid argument for any other value. */
typedef enum w4jit_threading {
  W4JIT_THREADING_POOL = 0,
  W4JIT_THREADING_OPENMP = 1
} w4jit_threading;
w4jit_status w4jit_set_threading_backend(w4jit_threading backend);
w4jit_threading w4jit_get_threading_backend(void);

/* Microseconds a pool worker spins for the next run before it sleeps
 * (default 1000); invalid argument when < 0. */
w4jit_status w4jit_set_spin_microseconds(int us);
int w4jit_get_spin_microseconds(void);

/* Pins the pool's workers one per CPU of the process's set, the caller's
 * CPUs first (0 off, default; 1 on; w4jit/parallel.hpp). */
void w4jit_set_thread_pinning(int on);
int w4jit_get_thread_pinning(void);

/* Message of the last failed call on this thread ("" if none). */
const char* w4jit_last_error(void);

/* level: 0 debug, 1 info, 2 warning, 3 error. NULL hook: drop messages. */
typedef void (*w4jit_log_fn)(int level, const char* message, void* user);
void w4jit_set_log_hook(w4jit_log_fn hook, void* user);

/* Loads a tuning file recorded by `w4jit sweep` (see w4jit/tuning.hpp);
 * on error the defaults stay in force. */
w4jit_status w4jit_load_tuning_file(const char* path);

const char* w4jit_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* W4JIT_W4JIT_H_ */
