// Small helpers the selftest's random draws and case parsers share.
#ifndef W4JIT_CHECK_DRAW_UTIL_H_
#define W4JIT_CHECK_DRAW_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>

#include "w4jit/types.hpp"

namespace w4jit::check {

template <class T, size_t N>
const T& Pick(std::mt19937_64* rng, const T (&options)[N]) {
  return options[std::uniform_int_distribution<size_t>(0, N - 1)(*rng)];
}

inline int64_t Uniform(std::mt19937_64* rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, std::max(lo, hi))(*rng);
}

inline bool Coin(std::mt19937_64* rng, double p = 0.5) {
  return std::bernoulli_distribution(p)(*rng);
}

inline int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// Which dimensions a checkpoint format packs 8 to an int32 (formats.md):
// K, and N (for u4 packed zero points, and AWQ's weights).
inline bool NeedsK8(WeightFormat f) {
  return f != WeightFormat::kUnpackedInt8 && f != WeightFormat::kAwqGemm;
}
inline bool NeedsN8(WeightFormat f, WeightType t) {
  if (f == WeightFormat::kAwqGemm) return true;
  return t == WeightType::kU4 &&
         (f == WeightFormat::kCompressedTensors || f == WeightFormat::kGptqV1 ||
          f == WeightFormat::kGptqV2);
}

// Text form of the enums (their ToString), parsed back by name.
template <class E>
bool ParseEnum(const std::string& text, std::initializer_list<E> values,
               E* out) {
  for (E v : values) {
    if (text == ToString(v)) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_DRAW_UTIL_H_
