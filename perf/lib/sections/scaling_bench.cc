#include "perf/lib/sections/scaling_bench.h"

#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/output_check.h"
#include "perf/lib/timing/checked_timing.h"
#include "perf/lib/timing/timing.h"
#include "runtime/formats/import.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::perf {
namespace {

constexpr int64_t kScalingMs[] = {1, 256};

struct BackendChoice {
  const char* name;
  ThreadingBackend backend;
};

// Restores the thread count and backend when the section is done.
class RestoreThreading {
 public:
  explicit RestoreThreading(int threads)
      : threads_(threads), backend_(GetThreadingBackend()) {}
  ~RestoreThreading() {
    (void)SetThreadingBackend(backend_);
    SetNumThreads(threads_);
  }

 private:
  const int threads_;
  const ThreadingBackend backend_;
};

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

}  // namespace

const LayerShape* ScalingLayer(const ScalingOptions& config) {
  if (config.layers.empty()) return nullptr;
  if (!config.layer.empty()) {
    for (const LayerShape& s : config.layers) {
      if (s.name == config.layer) return &s;
    }
    return nullptr;
  }
  for (const LayerShape& s : config.layers) {
    if (s.n == s.k) return &s;
  }
  return &config.layers.front();
}

absl::Status RunScaling(const ScalingOptions& config,
                        const std::function<void(const std::string&)>& say,
                        BenchReport* report) {
  const LayerShape* shape = ScalingLayer(config);
  if (shape == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layer: no layer named '", config.layer, "'"));
  }
  const int max_threads = report->threads;
  RestoreThreading restore(config.threads);
  std::vector<BackendChoice> backends = {{"pool", ThreadingBackend::kPool}};
  if (SetThreadingBackend(ThreadingBackend::kOpenMP).ok()) {
    backends.push_back({"omp", ThreadingBackend::kOpenMP});
  }
  say(absl::StrFormat("scaling: %s N=%d K=%d, 1..%d threads", shape->name,
                      shape->n, shape->k, max_threads));
  for (Mode mode : config.modes) {
    const LayerDesc desc = BenchDesc(*shape, mode, config.weight_type);
    const internal::CanonicalWeights w = BenchWeights(desc, 0x5CA1Eull);
    absl::StatusOr<internal::OwnedCheckpoint> ckpt =
        internal::ExportWeights(desc, w, WeightFormat::kUnpackedInt8);
    if (!ckpt.ok()) return ckpt.status();
    absl::StatusOr<std::unique_ptr<Layer>> layer =
        Layer::Create(desc, ckpt->view());
    for (int64_t m : kScalingMs) {
      const std::vector<uint16_t> x = BenchActivations(m, desc.k, 0x5CA1E + m);
      std::vector<uint16_t> y(static_cast<size_t>(m * desc.n));
      // Every backend and thread count of this M is one contender, timed
      // interleaved so that a shared machine's drift hits them alike; each
      // sets its backend and threads before its calls (the untimed call
      // before a batch absorbs a pool's restart).
      std::vector<ScalingRow> rows;
      std::vector<Contender> contenders;
      for (const BackendChoice& b : backends) {
        for (int t = 1; t <= max_threads; ++t) {
          ScalingRow row;
          row.impl = mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
          row.backend = b.name;
          row.layer = shape->name;
          row.n = shape->n;
          row.k = shape->k;
          row.m = m;
          row.threads = t;
          const auto run = [&, b, t] {
            (void)SetThreadingBackend(b.backend);
            SetNumThreads(t);
            return (*layer)->Run(m, x.data(), desc.k, y.data(), desc.n);
          };
          absl::Status ok = layer.ok() ? run() : layer.status();
          // Checked at M = 1 (the reference at M = 256 takes seconds).
          if (ok.ok() && m == 1) {
            ok = CheckLayerOutput(desc, w, m, x.data(), desc.k, y.data(),
                                  desc.n);
            if (!ok.ok()) row.status = RowStatus::kFailed;
          }
          if (!ok.ok()) {
            if (row.status == RowStatus::kOk) row.status = RowStatus::kError;
            row.note = std::string(ok.message());
          } else {
            contenders.push_back(run);
          }
          rows.push_back(row);
        }
      }
      const std::vector<absl::StatusOr<TimingResult>> results =
          TimeInterleaved(contenders, config.timing);
      size_t next = 0;
      for (ScalingRow& row : rows) {
        if (row.status != RowStatus::kOk) continue;
        const absl::StatusOr<TimingResult>& r = results[next++];
        if (!TakeSamples(r, &row)) continue;
        row.time_us = r->median_us;
        row.min_us = r->min_us;
        row.p90_us = r->p90_us;
      }
      for (ScalingRow& row : rows) {
        say(absl::StrFormat("  %s %s M=%d %d thread(s): p50 %.1f us", row.impl,
                            row.backend, m, row.threads, row.time_us));
        report->scaling.push_back(row);
      }
    }
  }
  return absl::OkStatus();
}

std::string DescribeWaitPolicy(const TimingOptions& timing) {
  const bool omp = GetThreadingBackend() == ThreadingBackend::kOpenMP;
  return absl::StrFormat(
      "oneDNN's OpenMP (libgomp) OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s "
      "(unset: spins up to\n  300000 pauses after a region, then sleeps); "
      "w4jit on %s%s. Every contender's batch\n  starts after a %.0f ms "
      "pause (longer than either spin) and one untimed call, so no row\n  "
      "runs beside another's spinning threads and each finds its own awake.",
      EnvOr("OMP_WAIT_POLICY", "unset"), EnvOr("GOMP_SPINCOUNT", "unset"),
      omp ? "the same OpenMP" : "its pool",
      omp ? ""
          : absl::StrFormat(" (spins %d us after a run, then sleeps; "
                            "pinning %s)",
                            GetSpinMicroseconds(),
                            GetThreadPinning() ? "on" : "off"),
      timing.settle_s * 1e3);
}

}  // namespace w4jit::perf
