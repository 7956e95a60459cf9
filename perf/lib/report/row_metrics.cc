#include "perf/lib/report/row_metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
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

std::optional<PeakOp> PeakOpOf(LayerCompute compute) {
  const bool zmm = compute.vector_bits == 512;
  switch (compute.op) {
    case ComputeOp::kScalar:
      return std::nullopt;
    case ComputeOp::kF32Fma:
      return zmm ? PeakOp::kF32FmaZmm : PeakOp::kF32FmaYmm;
    case ComputeOp::kBf16Dot:
      return PeakOp::kBf16DotZmm;
    case ComputeOp::kInt8Dot:
      // The AVX2 kernels accumulate in int16 (vpmaddubsw + vpaddw): their
      // ceiling is that loop's, not the exact int32 emulation's.
      return zmm ? PeakOp::kInt8DotVnniZmm : PeakOp::kInt8DotAvx2I16;
    case ComputeOp::kAmxBf16:
      return PeakOp::kAmxBf16;
    case ComputeOp::kAmxInt8:
      return PeakOp::kAmxInt8;
  }
  return std::nullopt;
}

std::string ComputeOpKey(LayerCompute compute) {
  const std::optional<PeakOp> op = PeakOpOf(compute);
  return op ? GetPeakOpInfo(*op).key : ToString(compute.op);
}

std::string PeerComputeOp(const std::string& impl,
                          const std::string& onednn_impl_name) {
  const bool int8 = impl == kImplOneDnnU8s8;
  if (absl::StrContains(absl::AsciiStrToLower(onednn_impl_name), "amx")) {
    return int8 ? "amx_int8" : "amx_bf16";
  }
  return int8 ? "int8_dot" : "bf16_dot";
}

bool RunsAmx(const BenchRow& row) {
  return absl::StartsWith(row.compute_op, "amx_");
}

std::string ComputePeakKeyFor(const BenchRow& row, const Roofline& roof) {
  if (row.compute_op == "int8_dot") {
    return FirstAvailable(roof, {"int8_vnni_zmm", "int8_avx2"});
  }
  if (row.compute_op == "bf16_dot") {
    return FirstAvailable(roof, {"bf16_dot_zmm", "f32_fma_zmm", "f32_fma_ymm"});
  }
  if (row.compute_op == "int8_avx2_i16") {
    return FirstAvailable(roof, {"int8_avx2_i16", "int8_avx2"});
  }
  return row.compute_op.empty()
             ? ""
             : FirstAvailable(roof, {row.compute_op.c_str()});
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

RowBounds BoundsFor(const BenchRow& row, const Roofline& roof) {
  RowBounds b;
  const double macs = static_cast<double>(row.m) * row.n * row.k;
  const bool interleaved_peak = absl::StartsWith(row.ceiling_basis, "peak ");
  const int64_t footprint =
      row.footprint_bytes > 0 ? row.footprint_bytes : row.weight_bytes;
  if (const ReadBandwidth* bw = roof.BandwidthFor(footprint);
      bw != nullptr && row.weight_bytes > 0) {
    double rate = bw->bytes_per_s;
    if (!interleaved_peak && !row.ceiling_basis.empty()) {
      rate = std::max(rate, row.ceiling_rate);
    }
    if (rate > 0) {
      b.memory_us = row.weight_bytes / rate * 1e6;
      const std::string level = roof.LevelFor(footprint);
      b.memory_basis =
          absl::StrFormat("%s%sread %.1f MB", level, level.empty() ? "" : " ",
                          static_cast<double>(bw->bytes) / 1e6);
    }
  }
  const std::string key = ComputePeakKeyFor(row, roof);
  if (const ComputePeak* peak = roof.Peak(key); peak != nullptr && macs > 0) {
    double rate = peak->macs_per_s;
    if (interleaved_peak && row.ceiling_basis.substr(5) == key) {
      rate = std::max(rate, row.ceiling_rate);
    }
    if (rate > 0) {
      b.compute_us = macs / rate * 1e6;
      b.compute_basis = absl::StrCat("peak ", key);
      b.compute_macs_per_s = rate;
    }
  }
  return b;
}

void FillRowMetrics(const Roofline& roof, BenchRow* row) {
  if (!row->ok() || row->time_us <= 0) return;
  const double seconds = row->time_us * 1e-6;
  const double macs = static_cast<double>(row->m) * row->n * row->k;
  row->gflops = 2.0 * macs / seconds * 1e-9;
  row->weight_gbps = row->weight_bytes / seconds * 1e-9;
  const RowBounds bounds = BoundsFor(*row, roof);
  row->memory_bound_us = bounds.memory_us;
  row->memory_basis = bounds.memory_basis;
  row->compute_bound_us = bounds.compute_us;
  row->compute_basis = bounds.compute_basis;
  row->compute_peak_gmacs = bounds.compute_macs_per_s * 1e-9;
  row->bound_us = bounds.bound_us();
  row->bound.clear();
  row->roofline_basis.clear();
  row->roofline_pct = 0.0;
  row->roofline_pct_min = 0.0;
  if (row->bound_us > 0) {
    row->bound = bounds.compute_binds() ? kBoundCompute : kBoundMemory;
    row->roofline_basis = bounds.basis();
    row->roofline_pct = 100.0 * row->bound_us / row->time_us;
    if (row->min_us > 0) {
      row->roofline_pct_min = 100.0 * row->bound_us / row->min_us;
    }
  }
  // The row against the ceiling timed beside it alone, whichever bound
  // that ceiling is.
  row->interleaved_pct = 0.0;
  if (row->ceiling_rate > 0) {
    const double rate = absl::StartsWith(row->ceiling_basis, "peak ")
                            ? macs / seconds
                            : row->weight_bytes / seconds;
    row->interleaved_pct = 100.0 * rate / row->ceiling_rate;
  }
  // The kernel cannot outrun the loop that measures its instruction's
  // peak or its read rate: every timing of that ceiling in the run met a
  // busy machine.
  if (row->roofline_pct > 100.0 && row->note.empty()) {
    row->note =
        "above the best ceiling of the run: every timing of it was "
        "disturbed";
  }
  if (RunsAmx(*row) && bounds.compute_us <= 0 && row->note.empty()) {
    row->note = "runs AMX, no AMX peak measured: memory bound only";
  }
}

}  // namespace w4jit::perf
