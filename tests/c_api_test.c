/* The C API from a C99 program: create a small layer from unpacked int8
 * data, run it in both modes, compare with a result computed here, and
 * check error codes and messages. Prints nothing and exits 0 on success;
 * on failure prints one line and exits 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "w4jit/w4jit.h"

enum { N = 3, K = 8, GROUP = 4, G = K / GROUP, M = 2 };

/* s4 values [N][K]; scales [G][N] (groups-major); bias [N]. */
static const int8_t kQ[N * K] = {-8, 7, 1,  0, 2,  -3, 4,  -1, /* n = 0 */
                                 5,  5, 5,  5, -5, -5, -5, -5, /* n = 1 */
                                 0,  1, -1, 2, -2, 3,  -3, 7}; /* n = 2 */
static const float kScales[G * N] = {0.5f, 0.25f, 2.0f, 1.0f, -0.125f, 4.0f};
static const float kBias[N] = {1.0f, -2.0f, 0.5f};
/* amax = 127 makes the DA8W4 activation scale exactly 1 and qa == x, so
 * both modes give the same exact result. */
static const float kX[M * K] = {127, -3, 5, 0, 1, 2, -127, 64,
                                -1,  2,  3, 4, 5, 6, 7,    127};

static int Fail(const char* what) {
  fprintf(stderr, "c_api_test: %s (last error: \"%s\")\n", what,
          w4jit_last_error());
  return 1;
}

static float Expected(int m, int n) {
  float y = kBias[n];
  int g, k;
  for (g = 0; g < G; ++g) {
    float partial = 0.0f;
    for (k = g * GROUP; k < (g + 1) * GROUP; ++k) {
      partial += (float)kQ[n * K + k] * kX[m * K + k];
    }
    y += kScales[g * N + n] * partial;
  }
  return y;
}

static void Describe(w4jit_layer_desc* desc, w4jit_weights* weights) {
  w4jit_layer_desc_init(desc);
  desc->n = N;
  desc->k = K;
  desc->group_size = GROUP;
  desc->weight_type = W4JIT_S4;
  desc->scale_dtype = W4JIT_F32;
  desc->act_dtype = W4JIT_F32;
  desc->out_dtype = W4JIT_F32;
  desc->has_bias = 1;
  desc->bias_dtype = W4JIT_F32;
  memset(weights, 0, sizeof *weights);
  weights->format = W4JIT_FORMAT_UNPACKED_INT8;
  weights->qweight = kQ;
  weights->scales = kScales;
  weights->bias = kBias;
  weights->groups_major = 1;
}

static int RunMode(w4jit_mode mode) {
  w4jit_layer_desc desc;
  w4jit_weights weights;
  w4jit_layer* layer = NULL;
  float y[M * (N + 1)];
  size_t bytes = 0;
  int m, n;
  Describe(&desc, &weights);
  desc.mode = mode;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_OK) {
    return Fail("create failed");
  }
  if (w4jit_layer_packed_bytes(layer, &bytes) != W4JIT_OK || bytes == 0) {
    w4jit_layer_destroy(layer);
    return Fail("packed_bytes failed");
  }
  {
    /* The vector kernels at M rows (no tiles below their amx_min_m), or the
     * reference. */
    w4jit_compute_op op = W4JIT_COMPUTE_AMX_INT8;
    int bits = -1;
    const w4jit_compute_op want =
        mode == W4JIT_DA8W4 ? W4JIT_COMPUTE_INT8_DOT : W4JIT_COMPUTE_F32_FMA;
    if (w4jit_layer_compute_at(layer, M, &op, &bits) != W4JIT_OK ||
        (op != want && op != W4JIT_COMPUTE_BF16_DOT &&
         op != W4JIT_COMPUTE_SCALAR) ||
        (bits != 0 && bits != 256 && bits != 512) ||
        w4jit_layer_compute_at(layer, M, &op, NULL) != W4JIT_OK ||
        w4jit_layer_compute_at(layer, M, NULL, &bits) == W4JIT_OK) {
      w4jit_layer_destroy(layer);
      return Fail("compute_at failed");
    }
  }
  for (m = 0; m < M * (N + 1); ++m) y[m] = -999.0f;
  if (w4jit_layer_run(layer, M, kX, K, y, N + 1) != W4JIT_OK) {
    w4jit_layer_destroy(layer);
    return Fail("run failed");
  }
  w4jit_layer_destroy(layer);
  for (m = 0; m < M; ++m) {
    for (n = 0; n < N; ++n) {
      /* Small integers times powers of two: exact in f32 either way. */
      if (y[m * (N + 1) + n] != Expected(m, n)) return Fail("wrong result");
    }
    if (y[m * (N + 1) + N] != -999.0f) return Fail("padding was written");
  }
  return 0;
}

static int Errors(void) {
  w4jit_layer_desc desc;
  w4jit_weights weights;
  w4jit_layer* layer = NULL;
  float y[M * N];
  int i;

  Describe(&desc, &weights);
  desc.group_size = 3;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_INVALID_ARGUMENT ||
      layer != NULL) {
    return Fail("bad group size was accepted");
  }
  if (strstr(w4jit_last_error(), "group_size = 3") == NULL) {
    return Fail("bad group size message");
  }

  Describe(&desc, &weights);
  weights.qweight = NULL;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "qweight is null") == NULL) {
    return Fail("null qweight");
  }
  if (w4jit_layer_create(&desc, &weights, NULL) != W4JIT_INVALID_ARGUMENT) {
    return Fail("null out_layer");
  }

  Describe(&desc, &weights);
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_OK) {
    return Fail("create failed");
  }
  if (w4jit_last_error()[0] != '\0') return Fail("error not cleared");
  if (w4jit_layer_run(layer, M, NULL, K, y, N) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "x is null") == NULL) {
    w4jit_layer_destroy(layer);
    return Fail("null x");
  }
  if (w4jit_layer_run(layer, M, kX, K, y, N - 1) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "ldy = 2") == NULL) {
    w4jit_layer_destroy(layer);
    return Fail("small ldy");
  }
  if (w4jit_layer_run(layer, -2, kX, K, y, N) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "M = -2") == NULL) {
    w4jit_layer_destroy(layer);
    return Fail("negative M");
  }
  /* An empty batch succeeds without touching y, even with NULL buffers. */
  for (i = 0; i < M * N; ++i) y[i] = -999.0f;
  if (w4jit_layer_run(layer, 0, kX, K, y, N) != W4JIT_OK ||
      w4jit_layer_run(layer, 0, NULL, K, NULL, N) != W4JIT_OK ||
      w4jit_last_error()[0] != '\0') {
    w4jit_layer_destroy(layer);
    return Fail("M = 0 is not a no-op");
  }
  for (i = 0; i < M * N; ++i) {
    if (y[i] != -999.0f) {
      w4jit_layer_destroy(layer);
      return Fail("M = 0 wrote y");
    }
  }
  w4jit_layer_destroy(layer);
  w4jit_layer_destroy(NULL);

  if (w4jit_layer_run(NULL, M, kX, K, y, N) != W4JIT_INVALID_ARGUMENT) {
    return Fail("null layer");
  }
  if (w4jit_set_num_threads(-1) != W4JIT_INVALID_ARGUMENT) {
    return Fail("negative thread count");
  }
  return 0;
}

/* DA8W4 activation scales: per token by default; per group runs (row 0's
 * groups both have amax 127, so it is exact; row 1's first group is not:
 * within 2% of its terms); W4A16 and bad values are refused. */
static int ActQuant(void) {
  w4jit_layer_desc desc;
  w4jit_weights weights;
  w4jit_layer* layer = NULL;
  float y[M * N];
  int m, n, k;
  Describe(&desc, &weights);
  if (desc.act_quant != W4JIT_ACT_QUANT_PER_TOKEN) {
    return Fail("desc_init: act_quant is not per token");
  }
  desc.act_quant = W4JIT_ACT_QUANT_PER_GROUP;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "per_group") == NULL) {
    return Fail("per-group W4A16 accepted");
  }
  desc.mode = W4JIT_DA8W4;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_OK) {
    return Fail("per-group create failed");
  }
  if (w4jit_layer_run(layer, M, kX, K, y, N) != W4JIT_OK) {
    w4jit_layer_destroy(layer);
    return Fail("per-group run failed");
  }
  w4jit_layer_destroy(layer);
  for (m = 0; m < M; ++m) {
    for (n = 0; n < N; ++n) {
      float terms = kBias[n] < 0 ? -kBias[n] : kBias[n];
      float diff = y[m * N + n] - Expected(m, n);
      for (k = 0; k < K; ++k) {
        float t =
            kScales[(k / GROUP) * N + n] * (float)kQ[n * K + k] * kX[m * K + k];
        terms += t < 0 ? -t : t;
      }
      if (diff < 0) diff = -diff;
      if (m == 0 ? diff != 0.0f : diff > 0.02f * terms) {
        return Fail("per-group result");
      }
    }
  }
  desc.act_quant = (w4jit_act_quant)5;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "act_quant = 5") == NULL) {
    return Fail("bad act_quant accepted");
  }
  return 0;
}

/* Float zero points: u = q + 8 with w = (u - 8) * s + z (exact here: small
 * integers times powers of two), and DA8W4's refusal of them. */
static const float kFloatZeros[G * N] = {0.5f, -1.5f, 0.25f, 2.0f, 0.0f, -4.0f};

static int FloatZero(void) {
  w4jit_layer_desc desc;
  w4jit_weights weights;
  w4jit_layer* layer = NULL;
  int8_t u[N * K];
  float y[M * N];
  int i, m, n, g, k;
  for (i = 0; i < N * K; ++i) u[i] = (int8_t)(kQ[i] + 8);
  Describe(&desc, &weights);
  desc.weight_type = W4JIT_U4;
  desc.zero_point_domain = W4JIT_ZP_FLOAT;
  desc.zero_point_dtype = W4JIT_F32;
  weights.qweight = u;
  weights.zero_points = kFloatZeros;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_OK) {
    return Fail("float zero points: create failed");
  }
  if (w4jit_layer_run(layer, M, kX, K, y, N) != W4JIT_OK) {
    w4jit_layer_destroy(layer);
    return Fail("float zero points: run failed");
  }
  w4jit_layer_destroy(layer);
  for (m = 0; m < M; ++m) {
    for (n = 0; n < N; ++n) {
      float want = Expected(m, n);
      for (g = 0; g < G; ++g) {
        for (k = g * GROUP; k < (g + 1) * GROUP; ++k) {
          want += kFloatZeros[g * N + n] * kX[m * K + k];
        }
      }
      if (y[m * N + n] != want) return Fail("float zero points: wrong result");
    }
  }
  desc.mode = W4JIT_DA8W4;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "DA8W4") == NULL) {
    return Fail("float zero points accepted in DA8W4");
  }
  return 0;
}

/* The threading settings, and both modes on every backend. */
static int Threading(void) {
  if (w4jit_set_spin_microseconds(-5) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "-5") == NULL) {
    return Fail("negative spin accepted");
  }
  if (w4jit_set_spin_microseconds(250) != W4JIT_OK ||
      w4jit_get_spin_microseconds() != 250) {
    return Fail("spin microseconds");
  }
  if (w4jit_set_threading_backend((w4jit_threading)7) !=
      W4JIT_INVALID_ARGUMENT) {
    return Fail("bad threading backend accepted");
  }
  w4jit_set_thread_pinning(1);
  if (w4jit_get_thread_pinning() != 1) return Fail("pinning on");
  w4jit_set_thread_pinning(0);
  if (w4jit_get_thread_pinning() != 0) return Fail("pinning off");
  if (w4jit_set_threading_backend(W4JIT_THREADING_OPENMP) == W4JIT_OK) {
    if (w4jit_get_threading_backend() != W4JIT_THREADING_OPENMP) {
      return Fail("OpenMP backend not kept");
    }
    if (RunMode(W4JIT_W4A16) != 0 || RunMode(W4JIT_DA8W4) != 0) return 1;
  }
  if (w4jit_set_threading_backend(W4JIT_THREADING_POOL) != W4JIT_OK ||
      w4jit_get_threading_backend() != W4JIT_THREADING_POOL) {
    return Fail("pool backend");
  }
  return 0;
}

/* desc.non_finite: PROPAGATE after init (row 1's NaN gives a non-finite
 * row, row 0 exact); ERROR names x[1, 3] and writes nothing; 7 is refused. */
static int NonFinite(void) {
  w4jit_layer_desc desc;
  w4jit_weights weights;
  w4jit_layer* layer = NULL;
  float x[M * K], y[M * N];
  int i, n;
  Describe(&desc, &weights);
  if (desc.non_finite != W4JIT_NON_FINITE_PROPAGATE) {
    return Fail("desc_init: non_finite is not propagate");
  }
  memcpy(x, kX, sizeof x);
  x[1 * K + 3] = NAN;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_OK) {
    return Fail("create failed");
  }
  if (w4jit_layer_run(layer, M, x, K, y, N) != W4JIT_OK) {
    w4jit_layer_destroy(layer);
    return Fail("propagate: NaN in x refused");
  }
  w4jit_layer_destroy(layer);
  for (n = 0; n < N; ++n) {
    if (y[n] != Expected(0, n) || isfinite(y[N + n])) {
      return Fail("propagate: wrong rows");
    }
  }
  desc.non_finite = W4JIT_NON_FINITE_ERROR;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_OK) {
    return Fail("create failed");
  }
  for (i = 0; i < M * N; ++i) y[i] = 5.0f;
  if (w4jit_layer_run(layer, M, x, K, y, N) != W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "x[1, 3] = nan") == NULL) {
    w4jit_layer_destroy(layer);
    return Fail("error: NaN in x accepted");
  }
  w4jit_layer_destroy(layer);
  for (i = 0; i < M * N; ++i) {
    if (y[i] != 5.0f) return Fail("error: y written");
  }
  desc.non_finite = (w4jit_non_finite)7;
  if (w4jit_layer_create(&desc, &weights, &layer) != W4JIT_INVALID_ARGUMENT ||
      layer != NULL || strstr(w4jit_last_error(), "non_finite = 7") == NULL) {
    return Fail("non_finite 7 accepted");
  }
  return 0;
}

int main(void) {
  if (w4jit_version() == NULL || w4jit_version()[0] == '\0') {
    return Fail("no version");
  }
  if (RunMode(W4JIT_W4A16) != 0) return 1;
  if (RunMode(W4JIT_DA8W4) != 0) return 1;
  if (Threading() != 0) return 1;
  if (Errors() != 0) return 1;
  if (ActQuant() != 0) return 1;
  if (FloatZero() != 0) return 1;
  if (NonFinite() != 0) return 1;
  return 0;
}
