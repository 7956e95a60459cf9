// MeasureReadBandwidth: each thread streams through its own slice of one
// buffer of the requested footprint, as a GEMV's threads split the weights.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "dispatch/cpu_profile.h"
#include "perf/lib/all_threads_timer.h"
#include "perf/lib/read_loop_generator.h"
#include "perf/lib/roofline.h"
#include "runtime/parallel.h"

namespace w4jit::perf {

absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(
    int64_t bytes, std::string label, const RooflineOptions& options) {
  if (bytes <= 0) return absl::InvalidArgumentError("bandwidth: bytes <= 0");
  ReadBandwidth bw;
  bw.label = std::move(label);
  bw.threads = internal::Concurrency();
  bw.vector_bytes = internal::HostCpu().features.avx512f ? 64 : 32;
  ReadLoopGenerator gen(bw.vector_bytes);
  if (absl::Status s = gen.Create(); !s.ok()) return s;
  const auto fn = gen.entry<ReadLoopGenerator::Fn>();

  const int64_t block = gen.block_bytes();
  const int64_t blocks =
      std::max<int64_t>(bw.threads, (bytes + block - 1) / block);
  bw.bytes = blocks * block;
  std::unique_ptr<uint8_t, decltype(&std::free)> buffer(
      static_cast<uint8_t*>(
          std::aligned_alloc(4096, (bw.bytes + 4095) / 4096 * 4096)),
      &std::free);
  if (buffer == nullptr) {
    return absl::ResourceExhaustedError("bandwidth: allocation failed");
  }
  std::vector<ReadLoopGenerator::Args> args(bw.threads);
  for (int t = 0; t < bw.threads; ++t) {
    const internal::Range r = internal::SplitRange(blocks, bw.threads, t);
    args[t] = {buffer.get() + r.begin * block, r.end - r.begin, 1};
  }
  // Each thread touches its own slice first, as it will read it.
  internal::ParallelRun(bw.threads, [&](int t) {
    std::memset(const_cast<uint8_t*>(args[t].begin), 1, args[t].blocks * block);
  });
  const auto run = [&] {
    return TimeOnAllThreads(bw.threads, [&](int t) { fn(&args[t]); });
  };
  run();  // warm the caches and TLB the way a hot kernel finds them
  const double one_pass = std::max(run(), 1e-7);
  const int64_t passes = std::clamp<int64_t>(
      static_cast<int64_t>(options.seconds_per_sample / one_pass), 1, 1 << 20);
  for (auto& a : args) a.passes = passes;
  for (int s = 0; s < std::max(1, options.samples); ++s) {
    const double wall = run();
    if (wall > 0) {
      bw.bytes_per_s = std::max(bw.bytes_per_s,
                                static_cast<double>(bw.bytes) * passes / wall);
    }
  }
  return bw;
}

}  // namespace w4jit::perf
