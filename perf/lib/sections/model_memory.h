// How much memory `w4jit bench model` needs (every copy of the model,
// the read probe's buffer, the import scratch) and whether this machine
// has it (MemAvailable of /proc/meminfo).
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_MEMORY_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "perf/lib/bench_options.h"
#include "perf/model_presets.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::perf {

// `bytes` as "1.23 GB" (10^9 bytes).
std::string Gb(int64_t bytes);

// Bytes a layer of `shape` holds once packed, for either mode (an upper
// bound: int4 weights, f32 scales and one f32 per group for zero points or
// the DA8W4 weight sums, f32 bias).
int64_t EstimatePackedBytes(const LayerShape& shape, WeightType weight_type);

// An expert's two projections as linear shapes: w13 (2I x H) and w2
// (H x I), with the preset's group and biases.
std::vector<LayerShape> MoeExpertShapes(const MoePreset& p);

// What `w4jit bench model` holds at once: every copy of the model (per
// mode and --prefetch distance)
// in one epilogue variant (a MoE model's: its attention linears and all
// its experts), the read probe's buffer, and the import scratch of the
// largest layer (a MoE model's: the random checkpoint of its experts).
struct ModelMemory {
  int64_t per_layer_bytes = 0;  // one decoder layer, all copies
  int64_t packed_bytes = 0;     // per_layer_bytes * layers
  int64_t read_buffer_bytes = 0;
  int64_t scratch_bytes = 0;
  // Copies of the model built (modes x prefetch / tuning settings x page
  // sizes): packed_bytes / copies is one copy's bound.
  int64_t copies = 1;
  int64_t total() const {
    return packed_bytes + read_buffer_bytes + scratch_bytes;
  }
};
ModelMemory EstimateModelMemory(const ModelOptions& config,
                                const ModelPreset& model,
                                int64_t read_buffer_bytes);

// MemAvailable of a /proc/meminfo text, in bytes.
absl::StatusOr<int64_t> ParseMemAvailable(absl::string_view meminfo);
// The same from this machine's /proc/meminfo.
absl::StatusOr<int64_t> MemAvailableBytes();

// OK if `need` fits in `available` bytes; else RESOURCE_EXHAUSTED naming
// both, and how many layers (--layers) would fit.
absl::Status CheckModelMemory(const ModelOptions& config,
                              const ModelMemory& need, int64_t available);

// The read probe's buffer: 8x the L3, at least 1 GiB.
int64_t ModelReadBufferBytes();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_MEMORY_H_
