// Tuning: per-shape kernel parameters recorded by `w4jit sweep` in a JSON
// file and applied by the runtime for the CPU class they were measured on.
//
// The table is generic: an entry maps parameter names ("gemm.mr",
// "handover_m", ...) to integers. Each kernel family turns a ParamMap into
// its own parameter struct and rejects names or values it cannot use, so
// a bad file can never produce a wrong kernel, only the defaults.
#ifndef W4JIT_DISPATCH_TUNING_H_
#define W4JIT_DISPATCH_TUNING_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

using ParamMap = std::map<std::string, int64_t>;

// The class a tuning applies to: CPUs whose kernels behave alike.
// "zen2", "zen3", "zen4", "zen5", "zen5-fp256", "intel-avx512",
// "intel-avx2", "generic". The ISA tier is part of it ("zen4/avx2" when
// capped) because a tuning measured on one tier means nothing on another.
std::string CpuClassOf(const CpuProfile& cpu, IsaTier isa);

struct TuningEntry {
  Mode mode = Mode::kW4A16;
  int64_t n = 0;
  int64_t k = 0;
  int64_t group_size = 0;  // as in LayerDesc (-1: per-channel)
  ParamMap params;
  // Every layer of the mode ("shape": "all" in the file; n, k and
  // group_size are then 0): a CPU-class-wide setting such as the decode
  // prefetch distance, which reaches layers whose shapes no file can list
  // (a MoE layer's per-thread expert panels). An entry for the exact shape
  // overrides its parameters one by one.
  bool all_shapes = false;
};

struct TuningFile {
  std::string cpu_class;  // CpuClassOf() where it was recorded
  std::string cpu_name;   // informational
  std::string created;    // informational, ISO date
  std::vector<TuningEntry> entries;
};

// Parses a tuning file's text. Malformed JSON, a missing or wrong-typed
// field, a negative or zero size, or an unknown key is an error naming it.
absl::StatusOr<TuningFile> ParseTuningJson(const std::string& text);
std::string TuningToJson(const TuningFile& file);

// Installs `path` as the active tuning for this process (replacing any
// earlier one) if it parses and was recorded on this CPU class; otherwise
// returns why, logs it, and keeps the defaults. An empty path clears.
absl::Status LoadTuningFile(const std::string& path);

// What is active now: the file (from LoadTuningFile or, on first use,
// W4JIT_TUNING_FILE) and why it is or is not applied.
struct TuningState {
  std::string path;                // empty: none
  std::string status;              // "applied", or the reason it is not
  std::optional<TuningFile> file;  // set when applied
};
TuningState ActiveTuning();

// The parameters recorded for this layer on this CPU class, if any: its
// mode's all-shapes entry, overlaid by its exact shape's entry.
std::optional<ParamMap> LookupTuning(const CpuProfile& cpu, IsaTier isa,
                                     const LayerDesc& desc);

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_TUNING_H_
