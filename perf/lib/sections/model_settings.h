// What a copy of the model in `w4jit bench model` is built under besides
// its mode: a --prefetch distance (installed as a temporary tuning file) or
// a --tunings file, and the labels rows and layer names give them.
#ifndef W4JIT_PERF_LIB_SECTIONS_MODEL_SETTINGS_H_
#define W4JIT_PERF_LIB_SECTIONS_MODEL_SETTINGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "perf/lib/bench_options.h"

namespace w4jit::perf {

// What a copy was built under besides its mode: a --prefetch distance
// or a --tunings file (neither: the defaults).
struct CopySetting {
  int prefetch = -1;   // -1: none given
  std::string tuning;  // a file's path; empty: none given
};

// The label of a --tunings file in rows and layer names: its stem.
std::string TuningLabel(const std::string& path);

// " label", or "" for an empty one.
std::string SpaceThen(const std::string& label);

// Makes the layers created from now on prefetch `distance` bytes
// ahead in both modes: a tuning file with that parameter for all shapes
// of each mode (so a MoE model's expert panels, whose shapes depend on the
// thread count, get it too), loaded (and then removed).
absl::Status InstallPrefetchTuning(const ModelOptions& config, int distance);

// The settings the section builds copies under: one per --prefetch
// distance, else one per --tunings file ("default": none), else the
// defaults alone.
std::vector<CopySetting> CopySettings(const ModelOptions& config);

// Makes the layers created from now on follow `setting`: its prefetch
// distance, or its --tunings file (an empty path: the defaults). With
// neither option given, nothing changes.
absl::Status ApplyCopySetting(const ModelOptions& config,
                              const CopySetting& setting);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SECTIONS_MODEL_SETTINGS_H_
