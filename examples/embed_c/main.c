/* Embedding w4jit from C99: the same 2x8 layer through the C API. */
#include <stdint.h>
#include <stdio.h>

#include "w4jit/w4jit.h"

int main(void) {
  const int8_t q[16] = {1, 1, 1, 1, 1, 1, 1, 1, -8, 0, 0, 0, 0, 0, 0, 7};
  const float scales[2] = {0.5f, 1.0f};
  const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float y[2] = {0, 0};
  w4jit_layer_desc desc;
  w4jit_weights w = {W4JIT_FORMAT_UNPACKED_INT8, q, scales, NULL, NULL, NULL, 1};
  w4jit_layer* layer = NULL;
  w4jit_layer_desc_init(&desc);
  desc.n = 2;
  desc.k = 8;
  desc.act_dtype = desc.out_dtype = W4JIT_F32;
  if (w4jit_layer_create(&desc, &w, &layer) != W4JIT_OK ||
      w4jit_layer_run(layer, 1, x, 8, y, 2) != W4JIT_OK) {
    printf("error: %s\n", w4jit_last_error());
    return 1;
  }
  printf("y = %g %g\n", y[0], y[1]); /* 18 48 */
  w4jit_layer_destroy(layer);
  return (y[0] == 18.0f && y[1] == 48.0f) ? 0 : 1;
}
