#include "runtime/da8w4_params.h"

#include "absl/strings/str_cat.h"
#include "jit/da8w4_gemm_generator.h"

namespace w4jit::internal {

Da8w4Params DefaultDa8w4Params(const CpuProfile& cpu, IsaTier isa) {
  Da8w4Params p;
  if (isa >= IsaTier::kAvx512Vnni) {
    // Guess from shared/design/kernels.md (no AVX-512 machine measured
    // yet): 6 rows x 2 blocks (4 zmm) = 24 int32 accumulators, ~80% of
    // issue slots vpdpbusd.
    p.mr = 6;
    p.nblk = 2;
    // Guess: 8 independent accumulator pairs hide the vpdpbusd latency at
    // M = 1 (16 accumulators of 28).
    p.small_m_nblk = 8;
  } else {
    // Measured on Zen 3 (EPYC 7xx3, 2 threads, 2025-12): tile loops with
    // 1..6 rows x 1 block; 6 rows reached ~47 MAC/cycle without flushes
    // and ~38 with them, 4 rows ~37 / ~32. 6 x 1 uses all 16 ymm.
    p.mr = 6;
    p.nblk = 1;
    // Measured (see above): at M = 1 the column loop is bound by the
    // unpack and int16 adds, not by latency; 4 blocks give 8 chains.
    p.small_m_nblk = 4;
  }
  // Guess: at M <= 16 the weight stream dominates, so one pass over the
  // weights (split over N only) beats a 2D split.
  p.handover_m = 16;
  // AVX2: the int16 bound (8 * 2 * 15 * 127 < 32767). AVX-512: an unroll
  // that keeps the loop overhead under 3% (guess).
  p.chunk_quads = 8;
  // Half the per-core L2 (the other half holds activations and the y
  // tile); 256 KiB when the cache size is unknown.
  p.panel_bytes = cpu.l2_bytes > 0 ? cpu.l2_bytes / 2 : 256 * 1024;
  return p;
}

absl::Status CheckDa8w4Params(const Da8w4Params& p, IsaTier isa) {
  const int max_blocks = Da8w4MaxTileBlocks(isa);
  if (p.mr < 1 || p.nblk < 1 || p.mr * p.nblk > max_blocks) {
    return absl::InvalidArgumentError(
        absl::StrCat("da8w4 tile ", p.mr, " x ", p.nblk, " blocks exceeds ",
                     max_blocks, " on ", ToString(isa)));
  }
  if (p.small_m_nblk < 1 || p.small_m_nblk > max_blocks) {
    return absl::InvalidArgumentError(
        absl::StrCat("da8w4 small_m_nblk ", p.small_m_nblk, " not in [1, ",
                     max_blocks, "]"));
  }
  if (p.handover_m < 0) {
    return absl::InvalidArgumentError("da8w4 handover_m < 0");
  }
  const int max_chunk = isa >= IsaTier::kAvx512Vnni ? 32 : 8;
  if (p.chunk_quads < 1 || p.chunk_quads > max_chunk) {
    return absl::InvalidArgumentError(absl::StrCat(
        "da8w4 chunk_quads ", p.chunk_quads, " not in [1, ", max_chunk, "]"));
  }
  if (p.panel_bytes < 1) {
    return absl::InvalidArgumentError("da8w4 panel_bytes < 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<Da8w4Params> ApplyDa8w4Tuning(const ParamMap& map,
                                             const Da8w4Params& base,
                                             IsaTier isa) {
  Da8w4Params p = base;
  for (const auto& [name, value] : map) {
    if (name == "mr") {
      p.mr = static_cast<int>(value);
    } else if (name == "nblk") {
      p.nblk = static_cast<int>(value);
    } else if (name == "small_m_nblk") {
      p.small_m_nblk = static_cast<int>(value);
    } else if (name == "handover_m") {
      p.handover_m = static_cast<int>(value);
    } else if (name == "chunk_quads") {
      p.chunk_quads = static_cast<int>(value);
    } else if (name == "panel_bytes") {
      p.panel_bytes = value;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown DA8W4 parameter \"", name, "\""));
    }
    if (value < 0 || value > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "DA8W4 parameter ", name, " = ", value, " is out of range"));
    }
  }
  if (absl::Status s = CheckDa8w4Params(p, isa); !s.ok()) return s;
  return p;
}

}  // namespace w4jit::internal
