// Layer descriptions and random data for the benchmarks. Generation is
// fast (a counter-based generator, 16 nibbles per draw) because a preset's
// layers hold up to 136 M weights; values are in the ranges the tests use
// (tests/util/test_layer.h), which the tests' mt19937 would fill too
// slowly here.
#ifndef W4JIT_PERF_LIB_BENCH_DATA_H_
#define W4JIT_PERF_LIB_BENCH_DATA_H_

#include <cstdint>
#include <vector>

#include "perf/model_presets.h"
#include "runtime/canonical_weights.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// What the benchmarks run: bf16 activations and outputs (as an LLM serving
// stack does), bf16 scales, f32 bias where the shape has one.
LayerDesc BenchDesc(const LayerShape& shape, Mode mode,
                    WeightType weight_type = WeightType::kS4);

// Nibbles uniform in [0, 15]; zero points 8 (s4) or uniform (u4); scales
// of both signs with magnitudes in [2^-8, 2^-4), exact in bf16; bias in
// (-2, 2).
internal::CanonicalWeights BenchWeights(const LayerDesc& desc, uint64_t seed);

// m x k bf16 values, uniform in (-2, 2), as raw bf16 bits.
std::vector<uint16_t> BenchActivations(int64_t m, int64_t k, uint64_t seed);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_BENCH_DATA_H_
