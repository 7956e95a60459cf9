// 16-bit storage of packed scales (and float zero points): a checkpoint's
// scales are bf16 or f16, so storing them widened to f32 spends twice the
// bytes of the stream on them. The packers keep them in the narrowest of
// bf16 / f16 / f32 that holds every value exactly, and the kernels widen
// them exactly (EmitLoadWidenedF32 in jit/emit_util.h).
#ifndef W4JIT_RUNTIME_SCALE_STORAGE_H_
#define W4JIT_RUNTIME_SCALE_STORAGE_H_

#include <cstdint>

#include "w4jit/types.hpp"

namespace w4jit::internal {

// Whether f is stored exactly as dtype t (f32: always).
bool ExactIn(float f, DType t);

// Element i of an array of dtype t := f, which must be exact in t.
void StoreScale(uint8_t* base, int64_t i, float f, DType t);

// Sees every value a packer will store and says the dtype to store them in:
// bf16 if every value is exact in it, else f16 (where the CPU has F16C, to
// widen it) if every value is, else f32.
class ScaleDtypeChooser {
 public:
  explicit ScaleDtypeChooser(bool f16_ok) : f16_(f16_ok) {}
  void See(float f) {
    bf16_ = bf16_ && ExactIn(f, DType::kBF16);
    f16_ = f16_ && ExactIn(f, DType::kF16);
  }
  bool AnyNarrow() const { return bf16_ || f16_; }
  DType Result() const {
    return bf16_ ? DType::kBF16 : (f16_ ? DType::kF16 : DType::kF32);
  }

 private:
  bool bf16_ = true;
  bool f16_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_SCALE_STORAGE_H_
