#include "perf/lib/row_metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace w4jit::perf {
namespace {

// The first of `keys` that was measured.
std::string FirstAvailable(const Roofline& roof,
                           std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (roof.Peak(key) != nullptr) return key;
  }
  return "";
}

}  // namespace

std::string ComputePeakKeyFor(const BenchRow& row, const Roofline& roof) {
  const bool avx512 = absl::StrContains(row.kernel, "__avx512");
  if (row.impl == kImplDa8w4) {
    // The AVX2 kernels accumulate in int16 (vpmaddubsw + vpaddw): their
    // ceiling is that loop's, not the exact int32 emulation's.
    return avx512 ? FirstAvailable(roof, {"int8_vnni_zmm"})
                  : FirstAvailable(roof, {"int8_avx2_i16", "int8_avx2"});
  }
  if (row.impl == kImplW4a16) {
    if (absl::StrContains(row.kernel, "bf16dot")) {
      return FirstAvailable(roof, {"bf16_dot_zmm"});
    }
    return avx512 ? FirstAvailable(roof, {"f32_fma_zmm"})
                  : FirstAvailable(roof, {"f32_fma_ymm"});
  }
  if (row.impl == kImplOneDnnU8s8) {
    return FirstAvailable(roof, {"int8_vnni_zmm", "int8_avx2"});
  }
  return FirstAvailable(roof, {"bf16_dot_zmm", "f32_fma_zmm", "f32_fma_ymm"});
}

void FoldInterleavedCeilings(const std::vector<BenchRow>& rows,
                             Roofline* roof) {
  for (const BenchRow& row : rows) {
    if (row.ceiling_rate <= 0) continue;
    if (absl::StartsWith(row.ceiling_basis, "peak ")) {
      const std::string key = row.ceiling_basis.substr(5);
      for (ComputePeak& p : roof->peaks) {
        if (p.key == key && p.available) {
          p.macs_per_s = std::max(p.macs_per_s, row.ceiling_rate);
        }
      }
      continue;
    }
    const int64_t bytes =
        row.footprint_bytes > 0 ? row.footprint_bytes : row.weight_bytes;
    for (ReadBandwidth& b : roof->bandwidths) {
      if (std::fabs(static_cast<double>(b.bytes) / bytes - 1.0) <= 0.1) {
        b.bytes_per_s = std::max(b.bytes_per_s, row.ceiling_rate);
      }
    }
  }
}

void FillRowMetrics(const Roofline& roof, BenchRow* row) {
  if (!row->ok() || row->time_us <= 0) return;
  const double seconds = row->time_us * 1e-6;
  const double macs = static_cast<double>(row->m) * row->n * row->k;
  row->gflops = 2.0 * macs / seconds * 1e-9;
  row->weight_gbps = row->weight_bytes / seconds * 1e-9;
  const bool bandwidth_bound = row->m <= kBandwidthBoundMaxM;
  const double rate =
      bandwidth_bound ? row->weight_bytes / seconds : macs / seconds;
  row->roofline_pct = 0.0;
  row->roofline_pct_min = 0.0;
  row->roofline_basis.clear();
  row->interleaved_pct =
      row->ceiling_rate > 0 ? 100.0 * rate / row->ceiling_rate : 0.0;
  // The run's ceiling for this row and what it is.
  double ceiling = 0.0;
  if (bandwidth_bound) {
    const ReadBandwidth* bw = roof.BandwidthFor(
        row->footprint_bytes > 0 ? row->footprint_bytes : row->weight_bytes);
    if (bw != nullptr && bw->bytes_per_s > 0) {
      ceiling = bw->bytes_per_s;
      // By footprint: the ceilings list says what each measurement was.
      row->roofline_basis = absl::StrFormat(
          "bw %.1f MB read", static_cast<double>(bw->bytes) / 1e6);
    }
  } else {
    const std::string key = ComputePeakKeyFor(*row, roof);
    if (const ComputePeak* peak = roof.Peak(key); peak != nullptr) {
      ceiling = peak->macs_per_s;
      row->roofline_basis = absl::StrCat("peak ", key);
    }
  }
  if (row->ceiling_rate > ceiling) {
    ceiling = row->ceiling_rate;
    row->roofline_basis = row->ceiling_basis;
  }
  if (ceiling > 0) row->roofline_pct = 100.0 * rate / ceiling;
  row->roofline_pct_min =
      row->min_us > 0 ? row->roofline_pct * row->time_us / row->min_us : 0.0;
  // The kernel cannot outrun the loop that measures its instruction's
  // peak: every timing of that ceiling in the run met a busy machine.
  if (row->roofline_pct > 100.0 && row->note.empty()) {
    row->note =
        "above the best ceiling of the run: every timing of it was "
        "disturbed";
  }
}

void FillSpeedups(std::vector<BenchRow>* rows) {
  for (BenchRow& row : *rows) {
    if (!row.ok() || (row.impl != kImplW4a16 && row.impl != kImplDa8w4)) {
      continue;
    }
    for (const BenchRow& peer : *rows) {
      if (!peer.ok() || peer.layer != row.layer || peer.m != row.m ||
          peer.cold != row.cold || peer.n != row.n || peer.k != row.k) {
        continue;
      }
      if (peer.impl == kImplOneDnnBf16) {
        row.speedup_vs_bf16 = peer.time_us / row.time_us;
      } else if (peer.impl == kImplOneDnnU8s8) {
        row.speedup_vs_u8s8 = peer.time_us / row.time_us;
      }
    }
  }
}

}  // namespace w4jit::perf
