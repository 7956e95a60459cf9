#include "perf/lib/bench_data.h"

#include <cmath>

#include "base/numeric.h"
#include "runtime/formats/import.h"

namespace w4jit::perf {
namespace {

// splitmix64: the i-th draw depends only on (seed, i).
uint64_t Mix(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from 24 random bits.
float Unit(uint64_t bits) {
  return static_cast<float>(bits & 0xFFFFFF) * (1.0f / 16777216.0f);
}

}  // namespace

LayerDesc BenchDesc(const LayerShape& shape, Mode mode,
                    WeightType weight_type) {
  LayerDesc d;
  d.n = shape.n;
  d.k = shape.k;
  d.group_size = shape.group_size;
  d.weight_type = weight_type;
  d.scale_dtype = DType::kBF16;
  d.act_dtype = DType::kBF16;
  d.out_dtype = DType::kBF16;
  d.mode = mode;
  d.has_bias = shape.has_bias;
  d.bias_dtype = DType::kF32;
  return d;
}

internal::CanonicalWeights BenchWeights(const LayerDesc& desc, uint64_t seed) {
  internal::CanonicalWeights w = internal::CanonicalShape(desc);
  const int64_t count = w.n * w.k;
  w.u.resize(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; i += 16) {
    uint64_t bits = Mix(seed, static_cast<uint64_t>(i / 16));
    for (int64_t j = i; j < i + 16 && j < count; ++j, bits >>= 4) {
      w.u[j] = static_cast<uint8_t>(bits & 0xF);
    }
  }
  const int64_t groups = w.n * w.groups;
  w.scales.resize(static_cast<size_t>(groups));
  w.zeros.resize(static_cast<size_t>(groups));
  for (int64_t i = 0; i < groups; ++i) {
    const uint64_t bits = Mix(seed ^ 0x5CA1E5ull, static_cast<uint64_t>(i));
    // 2^(-8 + [0, 4)) with a random sign, rounded to bf16 (stays in range).
    const float magnitude =
        std::ldexp(1.0f + Unit(bits), -8 + (bits >> 32) % 4);
    const float s = internal::Bf16ToF32(internal::F32ToBf16(magnitude));
    w.scales[i] = (bits >> 40) & 1 ? -s : s;
    w.zeros[i] = w.asymmetric ? static_cast<uint8_t>((bits >> 48) & 0xF) : 8;
  }
  if (desc.has_bias) {
    w.bias.resize(static_cast<size_t>(w.n));
    for (int64_t i = 0; i < w.n; ++i) {
      w.bias[i] =
          4.0f * Unit(Mix(seed ^ 0xB1A5ull, static_cast<uint64_t>(i))) - 2.0f;
    }
  }
  return w;
}

std::vector<uint16_t> BenchActivations(int64_t m, int64_t k, uint64_t seed) {
  std::vector<uint16_t> x(static_cast<size_t>(m * k));
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = 4.0f * Unit(Mix(seed, i)) - 2.0f;
    x[i] = internal::F32ToBf16(v);
  }
  return x;
}

}  // namespace w4jit::perf
