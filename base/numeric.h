// Exact conversions between the 16-bit float formats and f32.
#ifndef W4JIT_BASE_NUMERIC_H_
#define W4JIT_BASE_NUMERIC_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#include "w4jit/types.hpp"

namespace w4jit::internal {

inline float Bf16ToF32(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t F32ToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// IEEE half to f32, exact (every f16 is representable in f32).
inline float F16ToF32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal half: normalise
    int e = -1;
    uint32_t m = man;
    do {
      ++e;
      m <<= 1;
    } while ((m & 0x400) == 0);
    bits = sign | ((112 - e) << 23) | ((m & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Reads element i of a buffer of dtype t as f32 (exact).
inline float LoadAsF32(const void* p, DType t, int64_t i) {
  switch (t) {
    case DType::kF32:
      return static_cast<const float*>(p)[i];
    case DType::kBF16:
      return Bf16ToF32(static_cast<const uint16_t*>(p)[i]);
    case DType::kF16:
      return F16ToF32(static_cast<const uint16_t*>(p)[i]);
  }
  return 0.0f;
}

// Writes f32 v as element i of a buffer of dtype t (bf16: nearest even).
inline void StoreFromF32(void* p, DType t, int64_t i, float v) {
  if (t == DType::kF32) {
    static_cast<float*>(p)[i] = v;
  } else {
    static_cast<uint16_t*>(p)[i] = F32ToBf16(v);
  }
}

inline size_t DTypeSize(DType t) { return t == DType::kF32 ? 4 : 2; }

}  // namespace w4jit::internal

#endif  // W4JIT_BASE_NUMERIC_H_
