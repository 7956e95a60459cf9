/* The MoE part of the C API from a C99 program: a 3-expert layer from
 * stacked and from per-expert unpacked int8 tensors, run in both modes
 * against a result computed here, then its error codes and messages.
 * Prints nothing and exits 0 on success; on failure prints one line and
 * exits 1. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "w4jit/w4jit.h"

enum { E = 3, H = 8, I = 4, GROUP = 4, T = 3, KTOP = 2 };

/* Stacked s4 values: w13 [E][2I][H], w2 [E][H][I]; scales [E][G][N]. */
static int8_t q13[E * 2 * I * H], q2[E * H * I];
static float s13[E * (H / GROUP) * 2 * I], s2[E * (I / GROUP) * H];
static float x[T * H];
static const int32_t kIds[T * KTOP] = {2, 0, 1, 1, 0, 2};
static const float kWeights[T * KTOP] = {0.75f, 0.25f, 1.0f,
                                         -0.5f, 2.0f,  0.125f};
/* The gate: silu on [gate | up] halves, or (oai) swigluoai on interleaved
 * rows with kAlpha and kLimit (a limit the gate and up values cross). */
static int oai;
static const float kAlpha = 1.5f, kLimit = 0.75f;

static int Fail(const char* what) {
  fprintf(stderr, "c_api_moe_test: %s (last error: \"%s\")\n", what,
          w4jit_last_error());
  return 1;
}

static void Fill(void) {
  int i;
  for (i = 0; i < E * 2 * I * H; ++i) q13[i] = (int8_t)((i * 7 + 3) % 16 - 8);
  for (i = 0; i < E * H * I; ++i) q2[i] = (int8_t)((i * 5 + 1) % 16 - 8);
  for (i = 0; i < (int)(sizeof s13 / sizeof *s13); ++i) {
    s13[i] = 0.0625f * (float)(1 + i % 3);
  }
  for (i = 0; i < (int)(sizeof s2 / sizeof *s2); ++i) {
    s2[i] = 0.125f * (float)(1 + i % 2);
  }
  for (i = 0; i < T * H; ++i) x[i] = (float)((i * 3) % 11 - 5) * 0.25f;
}

/* y[t, c] in double, from the definition. */
static double Expected(int t, int c) {
  double y = 0.0;
  int j, r, h;
  for (j = 0; j < KTOP; ++j) {
    const int e = kIds[t * KTOP + j];
    double down = 0.0;
    for (r = 0; r < I; ++r) {
      double g = 0.0, u = 0.0, a;
      const int gr = oai ? 2 * r : r, ur = oai ? 2 * r + 1 : I + r;
      for (h = 0; h < H; ++h) {
        const int grp = h / GROUP;
        g += q13[(e * 2 * I + gr) * H + h] *
             (double)s13[(e * (H / GROUP) + grp) * 2 * I + gr] * x[t * H + h];
        u += q13[(e * 2 * I + ur) * H + h] *
             (double)s13[(e * (H / GROUP) + grp) * 2 * I + ur] * x[t * H + h];
      }
      if (oai) {
        g = g < kLimit ? g : kLimit;
        u = u < -kLimit ? -kLimit : (u > kLimit ? kLimit : u);
        a = g / (1.0 + exp(-kAlpha * g)) * (u + 1.0);
      } else {
        a = g / (1.0 + exp(-g)) * u;
      }
      down += q2[(e * H + c) * I + r] *
              (double)s2[(e * (I / GROUP) + r / GROUP) * H + c] * a;
    }
    y += kWeights[t * KTOP + j] * down;
  }
  return y;
}

static void Describe(w4jit_moe_desc* d, w4jit_mode mode,
                     w4jit_act_quant act_quant) {
  w4jit_moe_desc_init(d);
  d->act_quant = act_quant;
  d->experts = E;
  d->hidden = H;
  d->intermediate = I;
  d->group_size = GROUP;
  d->scale_dtype = W4JIT_F32;
  d->act_dtype = W4JIT_F32;
  d->out_dtype = W4JIT_F32;
  d->mode = mode;
  d->activation = oai ? W4JIT_ACT_SWIGLUOAI : W4JIT_ACT_SILU;
  if (oai) {
    d->swiglu_alpha = kAlpha;
    d->swiglu_limit = kLimit;
  }
}

static w4jit_weights View(const void* q, const float* s) {
  w4jit_weights w;
  memset(&w, 0, sizeof w);
  w.format = W4JIT_FORMAT_UNPACKED_INT8;
  w.qweight = q;
  w.scales = s;
  w.groups_major = 1;
  return w;
}

static int Check(const w4jit_moe* moe, double tol) {
  float y[T * (H + 1)];
  int t, c;
  for (t = 0; t < T * (H + 1); ++t) y[t] = -999.0f;
  if (w4jit_moe_run(moe, T, x, H, kIds, kWeights, KTOP, y, H + 1, 0) !=
      W4JIT_OK) {
    return Fail("run failed");
  }
  for (t = 0; t < T; ++t) {
    for (c = 0; c < H; ++c) {
      const double want = Expected(t, c);
      if (fabs(y[t * (H + 1) + c] - want) > tol * (1.0 + fabs(want))) {
        fprintf(stderr, "c_api_moe_test: y[%d, %d] = %g, want %g\n", t, c,
                y[t * (H + 1) + c], want);
        return 1;
      }
    }
    if (y[t * (H + 1) + H] != -999.0f) return Fail("padding written");
  }
  return 0;
}

static int RunMode(w4jit_mode mode, w4jit_act_quant act_quant, double tol) {
  w4jit_moe_desc desc;
  w4jit_weights w13 = View(q13, s13), w2 = View(q2, s2);
  w4jit_weights per13[E], per2[E];
  w4jit_expert_strides st13, st2;
  w4jit_moe* moe = NULL;
  size_t bytes = 0;
  int e, bad;
  Describe(&desc, mode, act_quant);
  memset(&st13, 0, sizeof st13);
  memset(&st2, 0, sizeof st2);
  st13.qweight = 2 * I * H;
  st13.scales = (H / GROUP) * 2 * I * (int64_t)sizeof(float);
  st2.qweight = H * I;
  st2.scales = (I / GROUP) * H * (int64_t)sizeof(float);
  if (w4jit_moe_create(&desc, &w13, &st13, &w2, &st2, &moe) != W4JIT_OK) {
    return Fail("stacked create failed");
  }
  if (w4jit_moe_packed_bytes(moe, &bytes) != W4JIT_OK || bytes == 0) {
    w4jit_moe_destroy(moe);
    return Fail("packed_bytes failed");
  }
  bad = Check(moe, tol);
  w4jit_moe_destroy(moe);
  if (bad) return bad;
  for (e = 0; e < E; ++e) {
    per13[e] = View(q13 + e * 2 * I * H, s13 + e * (H / GROUP) * 2 * I);
    per2[e] = View(q2 + e * H * I, s2 + e * (I / GROUP) * H);
  }
  if (w4jit_moe_create_per_expert(&desc, per13, per2, &moe) != W4JIT_OK) {
    return Fail("per-expert create failed");
  }
  bad = Check(moe, tol);
  w4jit_moe_destroy(moe);
  return bad;
}

static int Errors(void) {
  w4jit_moe_desc desc;
  w4jit_weights w13 = View(q13, s13), w2 = View(q2, s2);
  w4jit_expert_strides st13, st2;
  w4jit_moe* moe = NULL;
  int32_t ids[T * KTOP];
  float w[T * KTOP], y[T * H];
  int i;
  Describe(&desc, W4JIT_W4A16, W4JIT_ACT_QUANT_PER_TOKEN);
  memset(&st13, 0, sizeof st13);
  memset(&st2, 0, sizeof st2);
  st13.qweight = 2 * I * H;
  st13.scales = (H / GROUP) * 2 * I * (int64_t)sizeof(float);
  st2.qweight = H * I;
  st2.scales = (I / GROUP) * H * (int64_t)sizeof(float);
  desc.activation = W4JIT_ACT_RELU;
  if (w4jit_moe_create(&desc, &w13, &st13, &w2, &st2, &moe) !=
          W4JIT_INVALID_ARGUMENT ||
      moe != NULL || strstr(w4jit_last_error(), "activation = relu") == NULL) {
    return Fail("relu MoE accepted");
  }
  desc.activation = W4JIT_ACT_SILU;
  /* Per-group activation scales quantize DA8W4 activations only. */
  desc.act_quant = W4JIT_ACT_QUANT_PER_GROUP;
  if (w4jit_moe_create(&desc, &w13, &st13, &w2, &st2, &moe) !=
          W4JIT_INVALID_ARGUMENT ||
      moe != NULL ||
      strstr(w4jit_last_error(), "act_quant = per_group") == NULL) {
    return Fail("per-group act_quant accepted for W4A16");
  }
  desc.act_quant = (w4jit_act_quant)7;
  desc.mode = W4JIT_DA8W4;
  if (w4jit_moe_create(&desc, &w13, &st13, &w2, &st2, &moe) !=
          W4JIT_INVALID_ARGUMENT ||
      moe != NULL || strstr(w4jit_last_error(), "act_quant = 7") == NULL) {
    return Fail("act_quant 7 accepted");
  }
  desc.act_quant = W4JIT_ACT_QUANT_PER_TOKEN;
  desc.mode = W4JIT_W4A16;
  if (w4jit_moe_create(&desc, &w13, &st13, &w2, &st2, &moe) != W4JIT_OK) {
    return Fail("create failed");
  }
  memcpy(ids, kIds, sizeof ids);
  memcpy(w, kWeights, sizeof w);
  for (i = 0; i < T * H; ++i) y[i] = 3.0f;
  ids[3] = E;
  if (w4jit_moe_run(moe, T, x, H, ids, w, KTOP, y, H, 0) !=
          W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "topk_ids[1, 1] = 3") == NULL) {
    w4jit_moe_destroy(moe);
    return Fail("expert id 3 of 3 accepted");
  }
  ids[3] = 1;
  w[0] = NAN;
  if (w4jit_moe_run(moe, T, x, H, ids, w, KTOP, y, H, 0) !=
          W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "topk_weights[0, 0] = nan") == NULL) {
    w4jit_moe_destroy(moe);
    return Fail("NaN routing weight accepted");
  }
  if (w4jit_moe_run(moe, T, x, H, ids, w, 0, y, H, 0) !=
          W4JIT_INVALID_ARGUMENT ||
      strstr(w4jit_last_error(), "k = 0") == NULL) {
    w4jit_moe_destroy(moe);
    return Fail("k = 0 accepted");
  }
  if (w4jit_moe_run(moe, T, x, H, ids, w, KTOP, y, H, 4) !=
      W4JIT_INVALID_ARGUMENT) {
    w4jit_moe_destroy(moe);
    return Fail("unknown flag accepted");
  }
  for (i = 0; i < T * H; ++i) {
    if (y[i] != 3.0f) {
      w4jit_moe_destroy(moe);
      return Fail("y written by a failed run");
    }
  }
  /* Unweighted runs do not read the weights. */
  if (w4jit_moe_run(moe, T, x, H, ids, NULL, KTOP, y, H,
                    W4JIT_MOE_UNWEIGHTED | W4JIT_MOE_ACCUMULATE) != W4JIT_OK) {
    w4jit_moe_destroy(moe);
    return Fail("unweighted run failed");
  }
  w4jit_moe_destroy(moe);
  w4jit_moe_destroy(NULL);
  if (w4jit_moe_run(NULL, T, x, H, ids, w, KTOP, y, H, 0) !=
      W4JIT_INVALID_ARGUMENT) {
    return Fail("null moe accepted");
  }
  return 0;
}

/* desc.non_finite: ERROR after init (Errors() above); PROPAGATE gives
 * token 0 (NaN weight) and token 1 (expert id E) NaN rows, token 2 its
 * result; a NaN in x then spoils its token only. */
static int NonFinite(void) {
  w4jit_moe_desc desc;
  w4jit_weights per13[E], per2[E];
  w4jit_moe* moe = NULL;
  int32_t ids[T * KTOP];
  float w[T * KTOP], y[T * H], xs[T * H];
  int e, t, c;
  Describe(&desc, W4JIT_W4A16, W4JIT_ACT_QUANT_PER_TOKEN);
  if (desc.non_finite != W4JIT_NON_FINITE_ERROR) {
    return Fail("desc_init: non_finite is not error");
  }
  desc.non_finite = W4JIT_NON_FINITE_PROPAGATE;
  for (e = 0; e < E; ++e) {
    per13[e] = View(q13 + e * 2 * I * H, s13 + e * (H / GROUP) * 2 * I);
    per2[e] = View(q2 + e * H * I, s2 + e * (I / GROUP) * H);
  }
  if (w4jit_moe_create_per_expert(&desc, per13, per2, &moe) != W4JIT_OK) {
    return Fail("propagating create failed");
  }
  memcpy(ids, kIds, sizeof ids);
  memcpy(w, kWeights, sizeof w);
  memcpy(xs, x, sizeof xs);
  w[1] = NAN;
  ids[2] = E;
  for (t = 0; t < 2; ++t) {
    if (w4jit_moe_run(moe, T, xs, H, ids, w, KTOP, y, H, 0) != W4JIT_OK) {
      w4jit_moe_destroy(moe);
      return Fail("propagate: bad routing refused");
    }
    for (c = 0; c < H; ++c) {
      const double want = Expected(2, c);
      if (!isnan(y[c]) || !isnan(y[H + c]) ||
          (t == 0 && fabs(y[2 * H + c] - want) > 1e-4 * (1.0 + fabs(want))) ||
          (t == 1 && !isnan(y[2 * H + c]))) {
        w4jit_moe_destroy(moe);
        return Fail("propagate: wrong rows");
      }
    }
    xs[2 * H + 5] = INFINITY;
  }
  w4jit_moe_destroy(moe);
  desc.non_finite = (w4jit_non_finite)7;
  if (w4jit_moe_create_per_expert(&desc, per13, per2, &moe) !=
          W4JIT_INVALID_ARGUMENT ||
      moe != NULL || strstr(w4jit_last_error(), "non_finite = 7") == NULL) {
    return Fail("non_finite 7 accepted");
  }
  return 0;
}

int main(void) {
  w4jit_moe_desc init;
  Fill();
  w4jit_moe_desc_init(&init);
  if (init.swiglu_alpha != 1.702f || init.swiglu_limit != 7.0f) {
    return Fail("desc_init: swigluoai constants are not gpt-oss's");
  }
  /* W4A16 with f32 x computes in f32; DA8W4 quantizes x and the
   * intermediate to int8 (about 1% of the magnitude). */
  if (RunMode(W4JIT_W4A16, W4JIT_ACT_QUANT_PER_TOKEN, 1e-4)) return 1;
  if (RunMode(W4JIT_DA8W4, W4JIT_ACT_QUANT_PER_TOKEN, 5e-2)) return 1;
  if (RunMode(W4JIT_DA8W4, W4JIT_ACT_QUANT_PER_GROUP, 5e-2)) return 1;
  oai = 1;
  if (RunMode(W4JIT_W4A16, W4JIT_ACT_QUANT_PER_TOKEN, 1e-4)) return 1;
  if (RunMode(W4JIT_DA8W4, W4JIT_ACT_QUANT_PER_TOKEN, 5e-2)) return 1;
  oai = 0;
  if (NonFinite()) return 1;
  return Errors();
}
