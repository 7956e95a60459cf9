// The engine of `w4jit selftest`: random layer configurations (shape,
// group, checkpoint format, weight type, mode, dtypes, bias, M with every
// tile tail, padded ldx/ldy, thread count, parallel backend), each run
// through the public Layer API on one ISA tier and checked element by
// element against the reference (check/layer_check.h). A configuration is
// a Case; its text form is a one-line reproducer.
#ifndef W4JIT_CHECK_SELFTEST_H_
#define W4JIT_CHECK_SELFTEST_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dispatch/cpu_profile.h"
#include "w4jit/types.hpp"

namespace w4jit::check {

// The parallel backends a case may run on, by name: "pool" (w4jit's own
// pool sized by SetNumThreads), "omp" (the OpenMP backend, when built with
// it) and "host" (a std::thread-per-chunk ParallelBackend installed with
// SetParallelBackend, as a host framework would).
std::vector<std::string> SelftestBackends();
// Whether `name` is one of the backends above (omp even where this build
// lacks it: installing it then fails to switch).
bool KnownSelftestBackend(const std::string& name);
// Makes the next runs use backend `name` with `threads` threads; false if
// the name is unknown.
bool InstallSelftestBackend(const std::string& name, int threads);

struct Case {
  internal::IsaTier isa = internal::IsaTier::kRef;
  LayerDesc desc;
  WeightFormat format = WeightFormat::kUnpackedInt8;
  bool groups_major = true;
  int64_t m = 1;
  int64_t ldx = 0;
  int64_t ldy = 0;
  int threads = 1;
  std::string backend = "pool";
  uint32_t weight_seed = 0;
  uint32_t x_seed = 0;
  // GPTQ act-order: the checkpoint carries a g_idx that permutes K
  // (CanonicalWeights::k_perm drawn from weight_seed). Any format but AWQ.
  bool act_order = false;
};

// "isa=avx2,mode=da8w4,n=37,...": every field, parseable by ParseCase.
std::string CaseToString(const Case& c);
absl::StatusOr<Case> ParseCase(const std::string& text);

// A random case on `isa` with 1..max_threads threads on one of `backends`.
// Sizes are bounded so that the reference check stays cheap (M * N * K
// about 2^21 at most).
Case RandomCase(std::mt19937_64* rng, internal::IsaTier isa, int max_threads,
                const std::vector<std::string>& backends);

struct CaseResult {
  bool ok = false;
  bool on_jit = false;     // the layer runs JIT kernels (not the reference)
  std::string error;       // why not ok: a Create/Run error or mismatches
  double worst_ratio = 0;  // max |error| / tolerance
};
// Creates the layer under the case's ISA cap, backend and thread count,
// runs it and checks every output (and that nothing past N / M was
// written). The backend and thread count stay installed afterwards
// (RunSelftest restores the defaults at the end).
CaseResult RunCase(const Case& c);

struct SelftestOptions {
  int64_t configs_per_tier = 10000;
  double seconds = 600;  // total over all tiers, split evenly
  uint64_t seed = 1;
  int max_threads = 0;                   // 0: the cores this process may use
  std::vector<internal::IsaTier> tiers;  // empty: every supported tier
  std::vector<std::string> backends;     // empty: SelftestBackends()
};

// Tiers this CPU supports, from ref up to the W4JIT_ISA-capped host tier.
std::vector<internal::IsaTier> SupportedTiers();

struct TierModeStats {
  internal::IsaTier tier = internal::IsaTier::kRef;
  bool moe = false;  // MoE layers (check/moe_selftest.h), else linear ones
  Mode mode = Mode::kW4A16;
  int64_t configs = 0;
  int64_t failed = 0;
  int64_t on_jit = 0;
  double worst_ratio = 0;
};

struct Progress {
  internal::IsaTier tier;
  int64_t done = 0;      // on this tier
  int64_t target = 0;    // configs_per_tier
  int64_t failed = 0;    // all tiers so far
  double elapsed_s = 0;  // all tiers so far
};

inline constexpr int64_t kMoeEvery = 6;

struct SelftestReport {
  // Per tier: linear w4a16, linear da8w4, moe w4a16, moe da8w4.
  std::vector<TierModeStats> stats;
  std::vector<std::string> failures;  // "CASE\n  error" for the first few
  int64_t total_failed = 0;
  double seconds = 0;
};

// Runs options.configs_per_tier cases on each tier, one tier after the
// other, each within its share of options.seconds: every kMoeEvery-th is a
// MoE layer (check/moe_selftest.h, drawn from a generator of its own, so
// the linear cases are the ones a seed drew before MoE draws existed).
// `progress` (may be empty) is called after every case.
SelftestReport RunSelftest(
    const SelftestOptions& options,
    const std::function<void(const Progress&)>& progress);

// The summary as an aligned text table.
std::string FormatSummary(const SelftestReport& report);

}  // namespace w4jit::check

#endif  // W4JIT_CHECK_SELFTEST_H_
