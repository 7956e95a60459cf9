// One run of a roofline loop on every thread: the streaming read loop over
// a buffer of a given footprint, or a compute peak loop. The roofline's
// "best of a few runs" uses it, and so does the bench to time a ceiling
// interleaved with the kernels it judges (on a shared machine a ceiling
// measured a minute earlier may have met other load than the kernel did).
#ifndef W4JIT_PERF_LIB_CEILINGS_CEILING_PROBE_H_
#define W4JIT_PERF_LIB_CEILINGS_CEILING_PROBE_H_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/ceilings/peak_loop_generator.h"
#include "perf/lib/ceilings/read_loop_generator.h"

namespace w4jit::perf {

class CeilingProbe {
 public:
  // Reads a buffer of at least `bytes` (split between the threads as a
  // GEMV splits its weights), each run `seconds` long or one pass.
  static absl::StatusOr<std::unique_ptr<CeilingProbe>> Read(int64_t bytes,
                                                            double seconds);
  // `op`'s peak loop, each run about `seconds` long. The CPU must have the
  // instruction (see MissingFeatureFor); for an AMX op the process asks
  // Linux for the tile permission first, and its refusal is the error.
  static absl::StatusOr<std::unique_ptr<CeilingProbe>> Compute(PeakOp op,
                                                               double seconds);

  // Runs once on internal::Concurrency() threads; wall seconds from the
  // first thread's start to the last one's end (after a start barrier).
  // What the machine can do: used for the run's best-of-N ceilings.
  double Run() const;
  // The same work split into a few chunks per thread that the threads take
  // as they come (internal::ParallelRun), no barrier: what a kernel can do
  // under the same conditions, on a machine whose cores are shared. For
  // timing interleaved with kernels.
  void RunShared() const;
  // Bytes read, or multiply-accumulates done, by one Run().
  double units_per_run() const { return units_; }
  int threads() const { return threads_; }
  int64_t bytes() const { return bytes_; }  // the buffer, for Read()
  int vector_bytes() const { return vector_bytes_; }

 private:
  CeilingProbe() = default;
  int threads_ = 1;
  double units_ = 0.0;
  int64_t bytes_ = 0;
  int vector_bytes_ = 0;
  std::unique_ptr<internal::Generator> gen_;
  std::unique_ptr<uint8_t, decltype(&std::free)> buffer_{nullptr, &std::free};
  std::vector<ReadLoopGenerator::Args> read_args_;    // one per thread
  std::vector<ReadLoopGenerator::Args> read_chunks_;  // for RunShared
  PeakLoopGenerator::Args peak_args_{1};
  PeakLoopGenerator::Args peak_chunk_{1};  // for RunShared
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CEILINGS_CEILING_PROBE_H_
