#include "perf/lib/ceilings/roofline.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "dispatch/amx_permission.h"
#include "dispatch/cpu_profile.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "runtime/threads/parallel.h"

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
  if (IsTileOp(op)) {
    if (absl::Status s = internal::RequestAmxTileData(); !s.ok()) {
      peak.note = absl::StrCat("n/a: ", s.message());
      return peak;
    }
  }
  absl::StatusOr<std::unique_ptr<CeilingProbe>> probe =
      CeilingProbe::Compute(op, options.seconds_per_sample);
  if (!probe.ok()) return probe.status();
  for (int s = 0; s < std::max(1, options.samples); ++s) {
    const double wall = (*probe)->Run();
    if (wall > 0) {
      peak.macs_per_s =
          std::max(peak.macs_per_s, (*probe)->units_per_run() / wall);
    }
  }
  peak.available = true;
  return peak;
}

absl::StatusOr<ReadBandwidth> MeasureReadBandwidth(
    int64_t bytes, std::string label, const RooflineOptions& options) {
  absl::StatusOr<std::unique_ptr<CeilingProbe>> probe =
      CeilingProbe::Read(bytes, options.seconds_per_sample);
  if (!probe.ok()) return probe.status();
  ReadBandwidth bw;
  bw.label = std::move(label);
  bw.threads = (*probe)->threads();
  bw.vector_bytes = (*probe)->vector_bytes();
  bw.bytes = (*probe)->bytes();
  for (int s = 0; s < std::max(1, options.samples); ++s) {
    const double wall = (*probe)->Run();
    if (wall > 0) {
      bw.bytes_per_s =
          std::max(bw.bytes_per_s, (*probe)->units_per_run() / wall);
    }
  }
  return bw;
}

const ComputePeak* Roofline::Peak(const std::string& key) const {
  for (const ComputePeak& p : peaks) {
    if (p.key == key && p.available) return &p;
  }
  return nullptr;
}

const ReadBandwidth* Roofline::BandwidthFor(int64_t bytes) const {
  const ReadBandwidth* best = nullptr;
  double best_distance = 0.0;
  for (const ReadBandwidth& b : bandwidths) {
    const double d = std::fabs(
        std::log(static_cast<double>(b.bytes) / static_cast<double>(bytes)));
    if (best == nullptr || d < best_distance) {
      best = &b;
      best_distance = d;
    }
  }
  return best;
}

std::string Roofline::LevelFor(int64_t bytes) const {
  if (l2_bytes > 0 && l3_bytes > 0) {
    if (bytes <= l2_bytes) return "L2";
    return bytes <= l3_bytes ? "L3" : "DRAM";
  }
  constexpr absl::string_view kSized = "-sized";
  const ReadBandwidth* best = nullptr;
  double best_distance = 0.0;
  for (const ReadBandwidth& b : bandwidths) {
    if (!absl::EndsWith(b.label, kSized)) continue;
    const double d = std::fabs(
        std::log(static_cast<double>(b.bytes) / static_cast<double>(bytes)));
    if (best == nullptr || d < best_distance) {
      best = &b;
      best_distance = d;
    }
  }
  if (best == nullptr) return "";
  return best->label.substr(0, best->label.size() - kSized.size());
}

absl::Status AddBandwidthFor(int64_t bytes, const std::string& label,
                             const RooflineOptions& options, Roofline* roof) {
  if (const ReadBandwidth* near = roof->BandwidthFor(bytes);
      near != nullptr &&
      std::fabs(static_cast<double>(near->bytes) / bytes - 1.0) <= 0.1) {
    return absl::OkStatus();
  }
  absl::StatusOr<ReadBandwidth> bw =
      MeasureReadBandwidth(bytes, label, options);
  if (!bw.ok()) return bw.status();
  roof->bandwidths.push_back(*std::move(bw));
  return absl::OkStatus();
}

absl::Status RemeasureKeepingBest(const RooflineOptions& options,
                                  Roofline* roof) {
  for (ComputePeak& p : roof->peaks) {
    if (!p.available) continue;
    absl::StatusOr<ComputePeak> again = MeasureComputePeak(p.op, options);
    if (!again.ok()) return again.status();
    p.macs_per_s = std::max(p.macs_per_s, again->macs_per_s);
  }
  for (ReadBandwidth& b : roof->bandwidths) {
    absl::StatusOr<ReadBandwidth> again =
        MeasureReadBandwidth(b.bytes, b.label, options);
    if (!again.ok()) return again.status();
    b.bytes_per_s = std::max(b.bytes_per_s, again->bytes_per_s);
  }
  return absl::OkStatus();
}

absl::StatusOr<Roofline> MeasureRoofline(const RooflineOptions& options) {
  Roofline roof;
  for (PeakOp op : AllPeakOps()) {
    absl::StatusOr<ComputePeak> peak = MeasureComputePeak(op, options);
    if (!peak.ok()) return peak.status();
    roof.peaks.push_back(*std::move(peak));
  }
  // Footprints that sit in each level with all threads reading: half of
  // every thread's L2, half of the L3, and four times the L3.
  const internal::CpuProfile& cpu = internal::HostCpu();
  const int64_t l2 = cpu.l2_bytes > 0 ? cpu.l2_bytes : (int64_t{1} << 20);
  const int64_t l3 = cpu.l3_bytes > 0 ? cpu.l3_bytes : (int64_t{32} << 20);
  const int threads = internal::Concurrency();
  roof.l2_bytes = l2 * threads;
  roof.l3_bytes = l3;
  const struct {
    int64_t bytes;
    const char* label;
  } sizes[] = {{l2 / 2 * threads, "L2-sized"},
               {l3 / 2, "L3-sized"},
               {l3 * 4, "DRAM-sized"}};
  for (const auto& size : sizes) {
    absl::StatusOr<ReadBandwidth> bw =
        MeasureReadBandwidth(size.bytes, size.label, options);
    if (!bw.ok()) return bw.status();
    roof.bandwidths.push_back(*std::move(bw));
  }
  return roof;
}

}  // namespace w4jit::perf
