#include "perf/lib/sections/model_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "dispatch/cpu_profile.h"

namespace w4jit::perf {
namespace {

constexpr double kGB = 1e9;

}  // namespace

std::string Gb(int64_t bytes) {
  return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / kGB);
}

int64_t EstimatePackedBytes(const LayerShape& shape, WeightType weight_type) {
  const int64_t groups = shape.group_size == -1
                             ? 1
                             : (shape.k + shape.group_size - 1) /
                                   std::max<int64_t>(1, shape.group_size);
  // Per column and group: a scale and a sum (8 bytes), or for u4 on the
  // f32-FMA flavour (AVX2, AVX-512 without BF16) the scale, z and 16 * z as
  // f32 (12 bytes; jit/w4a16_layout.h). The bf16-dot flavour folds u4 zero
  // points into 16-bit meta, so 12 also bounds it.
  const int64_t meta_bytes = weight_type == WeightType::kU4 ? 12 : 8;
  return shape.n * ((shape.k + 1) / 2) + shape.n * groups * meta_bytes +
         (shape.has_bias ? shape.n * 4 : 0);
}

std::vector<LayerShape> MoeExpertShapes(const MoePreset& p) {
  return {{"w13", 2 * p.intermediate, p.hidden, p.group_size, p.biases},
          {"w2", p.hidden, p.intermediate, p.group_size, p.biases}};
}

ModelMemory EstimateModelMemory(const ModelOptions& config,
                                const ModelPreset& model,
                                int64_t read_buffer_bytes) {
  ModelMemory m;
  int64_t largest = 0;
  for (const LayerShape& s : model.layers) {
    m.per_layer_bytes += EstimatePackedBytes(s, config.weight_type) *
                         static_cast<int64_t>(config.modes.size());
    // The canonical nibbles (a byte each) and the exported int8
    // checkpoint.
    largest = std::max(
        largest, 2 * s.n * s.k + EstimatePackedBytes(s, config.weight_type));
  }
  if (model.moe.has_value()) {
    // Every expert of the layer, packed, per mode; the import scratch is
    // the random checkpoint: canonical nibbles (a byte each), f32 scales
    // and u8 zero points, and the checkpoint twice (per expert and
    // stacked), at most as large as packed for s4 (compressed-tensors)
    // and a byte a weight for u4.
    int64_t moe_bytes = 0, moe_scratch = 0;
    for (const LayerShape& s : MoeExpertShapes(*model.moe)) {
      const int64_t packed = EstimatePackedBytes(s, config.weight_type);
      const int64_t groups =
          s.group_size == -1 ? 1 : (s.k + s.group_size - 1) / s.group_size;
      moe_bytes += packed;
      moe_scratch += s.n * s.k + s.n * groups * 5 +
                     2 * (config.weight_type == WeightType::kS4
                              ? packed
                              : s.n * s.k + s.n * groups * 8 + s.n * 4);
    }
    m.per_layer_bytes += model.moe->experts * moe_bytes *
                         static_cast<int64_t>(config.modes.size());
    largest = std::max(largest, model.moe->experts * moe_scratch);
  }
  const int64_t settings =
      std::max<int64_t>(1, static_cast<int64_t>(config.model_prefetch.size() +
                                                config.model_tunings.size())) *
      static_cast<int64_t>(config.model_huge_pages.size());
  m.per_layer_bytes *= settings;
  m.copies = settings * static_cast<int64_t>(config.modes.size());
  m.packed_bytes = m.per_layer_bytes * config.model_layers;
  m.read_buffer_bytes = read_buffer_bytes;
  m.scratch_bytes = largest;
  return m;
}

absl::StatusOr<int64_t> ParseMemAvailable(absl::string_view meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    const bool kb = absl::ConsumeSuffix(&line, "kB");
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &v) || v < 0) {
      break;
    }
    return kb ? v * 1024 : v;
  }
  return absl::NotFoundError("no MemAvailable line in /proc/meminfo");
}

absl::StatusOr<int64_t> MemAvailableBytes() {
  std::ifstream f("/proc/meminfo");
  if (!f) return absl::NotFoundError("cannot read /proc/meminfo");
  std::stringstream text;
  text << f.rdbuf();
  return ParseMemAvailable(text.str());
}

absl::Status CheckModelMemory(const ModelOptions& config,
                              const ModelMemory& need, int64_t available) {
  if (need.total() <= available) return absl::OkStatus();
  const int64_t room = available - need.read_buffer_bytes - need.scratch_bytes;
  const int64_t fit = need.per_layer_bytes > 0
                          ? std::max<int64_t>(0, room) / need.per_layer_bytes
                          : 0;
  return absl::ResourceExhaustedError(absl::StrFormat(
      "--model=%s with %d layers in %d mode(s) needs %d bytes (%s: "
      "packed "
      "weights %s, read buffer %s, import scratch %s) but "
      "MemAvailable is %d "
      "bytes (%s); %s",
      config.model, config.model_layers, config.modes.size(), need.total(),
      Gb(need.total()), Gb(need.packed_bytes), Gb(need.read_buffer_bytes),
      Gb(need.scratch_bytes), available, Gb(available),
      fit > 0 ? absl::StrCat("--layers=", fit, " fits")
              : std::string("not even one layer fits")));
}

int64_t ModelReadBufferBytes() {
  const int64_t l3 = internal::HostCpu().l3_bytes > 0
                         ? internal::HostCpu().l3_bytes
                         : (int64_t{32} << 20);
  return std::max<int64_t>(8 * l3, int64_t{1} << 30);
}

}  // namespace w4jit::perf
