// Weights and layers for the microbenchmarks, built on first use and kept
// while consecutive benchmarks (registered layer by layer) reuse them: a
// preset's largest layer holds 150 M weights, so only the latest is kept.
#ifndef W4JIT_PERF_GBENCH_PREPARED_LAYERS_H_
#define W4JIT_PERF_GBENCH_PREPARED_LAYERS_H_

#include "absl/status/statusor.h"
#include "perf/model_presets.h"
#include "runtime/canonical_weights.h"
#include "runtime/formats/import.h"
#include "w4jit/layer.hpp"

namespace w4jit::perf {

struct PreparedWeights {
  LayerDesc desc;  // W4A16 desc of the shape; modes differ only in `mode`
  internal::CanonicalWeights weights;
  internal::OwnedCheckpoint checkpoint;
};

// Random weights of `shape` and their unpacked-int8 checkpoint.
absl::StatusOr<const PreparedWeights*> WeightsFor(const LayerShape& shape);

// A layer of `shape` in `mode` created from WeightsFor(shape).
absl::StatusOr<const Layer*> LayerFor(const LayerShape& shape, Mode mode);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_GBENCH_PREPARED_LAYERS_H_
