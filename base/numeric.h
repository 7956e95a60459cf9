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

// f32 to IEEE half when that is exact (normal or subnormal halves, zeros);
// false for any other value (rounding, overflow, Inf, NaN).
inline bool F32ToF16Exact(float f, uint16_t* out) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const int exp = static_cast<int>((bits >> 23) & 0xFF);
  const uint32_t man = bits & 0x7FFFFF;
  if (exp == 0) {  // zero, or an f32 subnormal (below every half)
    if (man != 0) return false;
    *out = sign;
    return true;
  }
  const int e = exp - 127;
  if (exp == 0xFF || e > 15 || e < -24) return false;
  if (e >= -14) {  // a normal half: 10 mantissa bits
    if ((man & 0x1FFF) != 0) return false;
    *out = static_cast<uint16_t>(sign | ((e + 15) << 10) | (man >> 13));
    return true;
  }
  // A subnormal half m * 2^-24: the significand shifted right by -(e + 1).
  const uint32_t full = man | 0x800000;
  const int shift = -(e + 1);
  if ((full & ((1u << shift) - 1)) != 0) return false;
  *out = static_cast<uint16_t>(sign | (full >> shift));
  return true;
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
