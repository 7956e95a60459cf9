// The machine's ceilings, measured in the same run as the kernels: compute
// peaks of the instructions the kernels use and streaming read bandwidth
// at the footprints the kernels read (docs/bench.md).
#ifndef W4JIT_PERF_LIB_CEILINGS_ROOFLINE_H_
#define W4JIT_PERF_LIB_CEILINGS_ROOFLINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "perf/lib/ceilings/peak_loop_generator.h"

namespace w4jit::perf {

struct ComputePeak {
  PeakOp op = PeakOp::kF32FmaYmm;
  std::string key;          // GetPeakOpInfo(op).key
  std::string description;  // GetPeakOpInfo(op).description
  bool available = false;
  // Why unavailable: "n/a: CPU lacks AVX512_VNNI", or for AMX "n/a: Linux
  // refused AMX tile data: ..." (dispatch/amx_permission.h).
  std::string note;
  double macs_per_s = 0.0;  // multiply-accumulates (FMA lanes) per second
  int threads = 0;
  int chains = 0;
};

struct ReadBandwidth {
  std::string label;  // "L2-sized", "L3-sized", "DRAM-sized", "qkv W4A16"
  int64_t bytes = 0;  // buffer footprint, all threads together
  double bytes_per_s = 0.0;
  int threads = 0;
  int vector_bytes = 0;  // load width: 32 (ymm) or 64 (zmm)
};

struct RooflineOptions {
  double seconds_per_sample = 0.03;  // each timed run
  int samples = 5;                   // the best is kept: a ceiling
};

// Peaks and bandwidths run on internal::Concurrency() threads.
absl::StatusOr<ComputePeak> MeasureComputePeak(PeakOp op,
                                               const RooflineOptions& options);
absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(
    int64_t bytes, std::string label, const RooflineOptions& options);

struct Roofline {
  std::vector<ComputePeak> peaks;  // one per PeakOp, unavailable ones noted
  std::vector<ReadBandwidth> bandwidths;
  // What the caches hold with every thread reading (their L2s together,
  // the L3), to name the level a footprint is read from; 0 if unknown.
  int64_t l2_bytes = 0;
  int64_t l3_bytes = 0;

  // "L2", "L3" or "DRAM": the level a footprint of `bytes` is read from.
  // Without the cache sizes: the label of the nearest "<level>-sized"
  // measurement without "-sized", or "" if there is none.
  std::string LevelFor(int64_t bytes) const;
  // nullptr if no peak has this key or it is unavailable.
  const ComputePeak* Peak(const std::string& key) const;
  // The measurement whose footprint is closest (in ratio) to `bytes`;
  // nullptr if none.
  const ReadBandwidth* BandwidthFor(int64_t bytes) const;
};

// Every compute peak (unavailable ones carry their note) and the read
// bandwidth at L2-, L3- and DRAM-sized footprints of the host's caches.
absl::StatusOr<Roofline> MeasureRoofline(const RooflineOptions& options);

// Measures every available peak and bandwidth of *roof again and keeps the
// higher figure: on a shared machine a ceiling measured once may have
// caught a busy moment, and a ceiling is a best case.
absl::Status RemeasureKeepingBest(const RooflineOptions& options,
                                  Roofline* roof);

// Adds a bandwidth measurement at `bytes` unless one within 10% exists.
absl::Status AddBandwidthFor(int64_t bytes, const std::string& label,
                             const RooflineOptions& options, Roofline* roof);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CEILINGS_ROOFLINE_H_
