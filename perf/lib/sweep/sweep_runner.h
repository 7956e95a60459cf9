// `w4jit sweep` without the printing: for each layer shape and mode, times
// candidate kernel parameters against the defaults (interleaved, in one
// process), after checking each candidate's output against the reference
// on that shape; keeps the best per group, combines the group winners,
// confirms the combination beats the defaults, and records it as a tuning
// entry. A wrong kernel is never timed, so it can never win.
#ifndef W4JIT_PERF_LIB_SWEEP_SWEEP_RUNNER_H_
#define W4JIT_PERF_LIB_SWEEP_SWEEP_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/tuning.h"
#include "perf/lib/bench_runner.h"
#include "perf/lib/timing/timing.h"
#include "perf/model_presets.h"
#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

struct SweepConfig {
  std::string preset = "llama3-8b";  // or "custom"
  std::vector<LayerShape> layers;
  std::vector<Mode> modes = {Mode::kW4A16, Mode::kDA8W4};
  // Decode (1), a small decode batch (4: where the small and tall int4
  // tiles hand over), the panel regime (16) and prefill (256).
  std::vector<int64_t> ms = {1, 4, 16, 256};
  // M values up to this are timed cold (each candidate's weights copied
  // until the copies exceed twice the last-level cache, and the calls
  // rotating through them, as `bench`'s cold rows do): decode streams its
  // weights from DRAM, where software prefetch and the tile's read pattern
  // decide, and hot weights would hide both. 0: everything hot.
  int64_t cold_max_m = 8;
  int threads = 0;        // 0: every core this process may use
  double budget_s = 0.0;  // whole sweep; 0: unlimited
  bool quick = false;
  TimingOptions timing;
  std::string out_dir = "w4jit-sweep-out";
  bool help = false;
};

// Which layer, mode and M a row is about.
struct SweepPoint {
  Mode mode = Mode::kW4A16;
  std::string layer;
  int64_t n = 0, k = 0, group_size = 0, m = 0;
};

// One timed (or refused) candidate at one M.
struct CandidateRow : SweepPoint {
  bool cold = false;   // timed over rotating copies (weights from DRAM)
  std::string group;   // candidate group, "defaults" or "combined"
  std::string params;  // ParamsToString
  std::string status;  // "ok", "wrong: ...", "invalid: ...", "error: ..."
  double median_us = 0.0;
  double gain = 0.0;  // default time / this time; 0 when not timed
};

// The combined winner of one layer and mode at one M.
struct WinnerRow : SweepPoint {
  double default_us = 0.0;
  double tuned_us = 0.0;
  std::string params;  // "defaults" when nothing beat them
};

struct SweepReport {
  std::string cpu_class;
  int threads = 0;
  std::vector<CandidateRow> candidates;
  std::vector<WinnerRow> winners;
  internal::TuningFile tuning;
  bool budget_exhausted = false;
  std::vector<std::string> notes;
};

// Builds a kernel for a layer with tuning parameters over the defaults;
// nullptr with *why_not when the parameters cannot run. Tests inject
// makers that build wrong kernels.
using KernelMaker =
    std::function<absl::StatusOr<std::unique_ptr<internal::LinearKernel>>(
        const LayerDesc& desc, const internal::CanonicalWeights& w,
        const internal::ParamMap& params, std::string* why_not)>;

// The JIT families with ApplyDa8w4Params / ApplyW4a16Params.
KernelMaker JitKernelMaker();

absl::StatusOr<SweepReport> RunSweep(const SweepConfig& config,
                                     const ProgressFn& progress,
                                     const KernelMaker& maker);

// Arguments after `sweep`; --quick sets smaller defaults.
absl::StatusOr<SweepConfig> ParseSweepArgs(int argc, const char* const* argv);
std::string SweepUsage();

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SWEEP_SWEEP_RUNNER_H_
