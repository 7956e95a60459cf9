// MeasureComputePeak: the peak loop on every thread, the best of a few runs.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "dispatch/cpu_profile.h"
#include "perf/lib/all_threads_timer.h"
#include "perf/lib/roofline.h"
#include "runtime/parallel.h"

namespace w4jit::perf {

absl::StatusOr<ComputePeak> MeasureComputePeak(PeakOp op,
                                               const RooflineOptions& options) {
  const PeakOpInfo& info = GetPeakOpInfo(op);
  ComputePeak peak;
  peak.op = op;
  peak.key = info.key;
  peak.description = info.description;
  peak.chains = info.chains;
  peak.threads = internal::Concurrency();
  const std::string missing =
      MissingFeatureFor(op, internal::HostCpu().features);
  if (!missing.empty()) {
    peak.note = absl::StrCat("n/a: CPU lacks ", missing);
    return peak;
  }
  // Not through the kernel cache: a measuring loop is not a library kernel
  // and must not show up in its JIT statistics.
  PeakLoopGenerator gen(op);
  if (absl::Status s = gen.Create(); !s.ok()) return s;
  const auto fn = gen.entry<PeakLoopGenerator::Fn>();

  // Calibrate on one thread until a run lasts at least 2 ms.
  PeakLoopGenerator::Args args{1000};
  double seconds = 0.0;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    fn(&args);
    seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (seconds >= 2e-3 || args.iterations > (int64_t{1} << 40)) break;
    args.iterations *= 4;
  }
  args.iterations = std::max<int64_t>(
      1, static_cast<int64_t>(args.iterations * options.seconds_per_sample /
                              seconds));
  const double macs = static_cast<double>(gen.MacsPerIteration()) *
                      static_cast<double>(args.iterations) * peak.threads;
  for (int s = 0; s < std::max(1, options.samples); ++s) {
    const double wall = TimeOnAllThreads(peak.threads, [&](int) { fn(&args); });
    if (wall > 0) peak.macs_per_s = std::max(peak.macs_per_s, macs / wall);
  }
  peak.available = true;
  return peak;
}

}  // namespace w4jit::perf
