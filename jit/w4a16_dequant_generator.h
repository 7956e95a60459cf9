// W4A16 panel dequantizer (family kW4a16Dequant): turns a K-block of one
// packed column block (f32-FMA layout, jit/w4a16_layout.h) into a dense
// f32 panel [kc][NB] of (u - z) * s (float zero points, key.float_zero:
// (u - 8) * s + zf), which the panel microkernel then
// multiplies with every row of an M block. The decode is paid once per
// panel instead of once per row.
//
// Key: family kW4a16Dequant; isa (ymm for kAvx2, zmm above); flavor
// kF32Fma; weight_type; group_size / per_channel; n = nr = NB; k = the
// segment length: the number of k that share one scale (the group, or
// the K block when it is shorter than the group). The number of segments
// per call is a runtime argument.
#ifndef W4JIT_JIT_W4A16_DEQUANT_GENERATOR_H_
#define W4JIT_JIT_W4A16_DEQUANT_GENERATOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "dispatch/kernel_key.h"
#include "jit/emit_util.h"
#include "jit/generator.h"

namespace w4jit::internal {

struct W4a16DequantArgs {
  const uint8_t* w;     // packed weights of the block at the first k
  const uint8_t* meta;  // meta of the block at the group of the first k
  float* panel;         // out: [segments * segment][NB] f32
  int64_t segments;     // >= 1; the meta pointer advances one group each
};

class W4a16DequantGenerator final : public Generator {
 public:
  using Fn = void (*)(const W4a16DequantArgs*);
  static absl::Status Check(const KernelKey& key);
  explicit W4a16DequantGenerator(const KernelKey& key);

 protected:
  void Generate() override;

 private:
  void EmitPairs(int pairs);

  KernelKey key_;
  VecEmitter vec_;
  ConstPool pool_;
  int lanes_;
  int nv_;
  int64_t nb_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_DEQUANT_GENERATOR_H_
