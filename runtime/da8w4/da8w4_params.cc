#include "runtime/da8w4/da8w4_params.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "dispatch/default_rows.h"
#include "dispatch/isa_traits.h"
#include "jit/da8w4_amx_plan.h"
#include "jit/da8w4_gemm_plan.h"
#include "jit/emit_util.h"

namespace w4jit::internal {

namespace {

// The base values for the tier's vector width, on any CPU (the panel size
// from the CPU's L2); the rows below change some of them per CPU class.
Da8w4Params BaseDa8w4Params(const CpuProfile& cpu, IsaTier isa) {
  Da8w4Params p;
  // The tiles of the vpdpbusd kernels (int32 accumulators in 32 zmm), or
  // of AVX2's vpmaddubsw pairs (int16 partial sums in 16 ymm).
  const bool vnni = TierHas(isa, IsaFeature::kAvx512Vnni);
  if (vnni) {
    // From the issue slots: 6 rows x 2 blocks (4 zmm) = 24 int32
    // accumulators, ~80% of issue slots vpdpbusd. Measured on Zen 4 only:
    // `w4jit sweep` over the tile shapes found the defaults within 1.07x of
    // the best candidate at M = 1, 16 and 256
    // (docs/performance/2026-12-03-zen4-first-run.md); the 2D split from
    // M = 3 is the zen4 row below. Zen 5 and the Xeon have not swept it.
    p.mr = 6;
    p.nblk = 2;
    // 4 blocks: 4 weight streams per thread, which read DRAM faster than 8
    // (docs/performance/2026-12-03-zen5-first-run.md, at its end).
    p.small_m_nblk = 4;
  } else {
    // 6 x 1 uses all 16 ymm and has the least unpack work per MAC; 3-4
    // blocks at small M (measured on Zen 3:
    // docs/performance/2026-12-03-zen3-dev-vm.md, at its end).
    p.mr = 6;
    p.nblk = 1;
    p.small_m_nblk = 4;
  }
  // Guess: at M <= 16 the weight stream dominates, so one pass over the
  // weights (split over N only) beats a 2D split.
  p.handover_m = 16;
  // AVX2: the int16 bound (8 * 2 * 15 * 127 < 32767). AVX-512: an unroll
  // that keeps the loop overhead under 3% (guess).
  p.chunk_quads = 8;
  // Half the per-core L2 (the other half holds activations and the y
  // tile); 256 KiB when the cache size is unknown. Measured flat on Zen 3
  // (64 KiB .. 512 KiB within 5% at M = 64), so a guess elsewhere.
  p.panel_bytes = cpu.l2_bytes > 0 ? cpu.l2_bytes / 2 : 256 * 1024;
  if (vnni) {
    // The largest tile the 32 zmm hold on a decoded panel, 14 rows x 1
    // block = 28 accumulators + 2 weight registers + 1 broadcast; per quad
    // 16 loads feed 28 vpdpbusd. A guess: no run compared panel tile
    // shapes. Zen 4 turns panels off (its row below: the in-loop tiles won
    // at every M); the Xeon runs them from M = 32 below the AMX tiles
    // (docs/performance/2026-12-06-xeon-amx-tiles.md, the `vec` runs).
    p.panel_mr = 14;
    p.panel_nblk = 1;
  } else {
    // 6 x 1 as the unpacking tile: 12 int16 accumulators, 2 weight
    // registers, broadcast and product fill the 16 ymm.
    p.panel_mr = 6;
    p.panel_nblk = 1;
  }
  // Guess from the op counts: a decode costs about as much as the in-loop
  // unpacking of 3-5 row tiles.
  p.panel_min_m = 32;
  return p;
}

// The tuning names (dispatch/param_table.h); the check does the rest.
constexpr int64_t kMaxRows = 64;
constexpr int64_t kMaxBlocks = 64;
constexpr int64_t kMaxM = int64_t{1} << 30;
const ParamField<Da8w4Params> kDa8w4Table[] = {
    {"mr", &Da8w4Params::mr, 1, kMaxRows},
    {"nblk", &Da8w4Params::nblk, 1, kMaxBlocks},
    {"small_m_nblk", &Da8w4Params::small_m_nblk, 1, kMaxBlocks},
    {"handover_m", &Da8w4Params::handover_m, 0, kMaxM},
    {"chunk_quads", &Da8w4Params::chunk_quads, 1, 64},
    {"panel_bytes", &Da8w4Params::panel_bytes, 1, int64_t{1} << 40},
    // kNoPanels or more: never decode.
    {"panel_min_m", &Da8w4Params::panel_min_m, 0, Da8w4Params::kNoPanels,
     /*saturate=*/true},
    {"panel_mr", &Da8w4Params::panel_mr, 1, kMaxRows},
    {"panel_nblk", &Da8w4Params::panel_nblk, 1, kMaxBlocks},
    {"prefetch_distance", &Da8w4Params::prefetch_distance, 0,
     kMaxPrefetchDistance},
    {"meta_16bit", &Da8w4Params::scales_16bit, 0, 1},
    // kNoAmx or more: never the tiles.
    {"amx_min_m", &Da8w4Params::amx_min_m, 0, Da8w4Params::kNoAmx,
     /*saturate=*/true},
    {"amx_mr", &Da8w4Params::amx_mr, 1, kDa8w4AmxMaxRows},
};
const ParamFamily<Da8w4Params> kDa8w4Family = {"DA8W4", kDa8w4Table,
                                               &CheckDa8w4Params};

// Where a CPU family differs from the base values (a row for "zen5" holds
// for "zen5-fp256" too: dispatch/default_rows.h). Each row names its run;
// the run's file has the measurements.
const std::vector<DefaultsRow>& Da8w4Rows() {
  static const auto* rows = new std::vector<DefaultsRow>{
      // Zen 4 issues the in-loop unpacking beside the double-pumped
      // vpdpbusd; a panel costs a decode pass and twice the bytes through L2.
      {"zen4",
       IsaFeature::kAvx512Vnni,
       Evidence::kMeasured,
       "docs/performance/2026-12-04-zen4-second-run.md: in-loop tiles "
       "faster than decoded panels at every M from 32 to 1024",
       {{"panel_min_m", Da8w4Params::kNoPanels}}},
      // The 6 x 2 tiles with the 2D split from M = 3 on; M = 1 and 2 keep
      // the one-pass tiles (`w4jit sweep` picked 2 from 2..64).
      {"zen4",
       IsaFeature::kAvx512Vnni,
       Evidence::kMeasured,
       "docs/performance/2026-12-04-zen4-third-run.md: 6 x 2 tiles with the "
       "2D split 10-24% faster at M = 4",
       {{"handover_m", 2}}},
      // Software prefetch on Intel AVX-512; other CPUs keep the hardware's
      // prefetch alone until measured.
      {"intel-avx512",
       IsaFeature::kAvx512Vnni,
       Evidence::kMeasured,
       "docs/performance/2026-12-05-xeon-amx-defaults.md: M = 1 at 84-85% "
       "of the read at 4096 bytes ahead, 76-77% without",
       {{"prefetch_distance", 4096}}},
      // The AMX tiles from M = 24 (decoded panels, one decode per work
      // item); at M = 17 they were not faster on every layer (an earlier,
      // loaded run), and decode (M <= 16) keeps the vector kernels.
      {"intel-avx512",
       IsaFeature::kAmxInt8,
       Evidence::kMeasured,
       "docs/performance/2026-12-06-xeon-amx-tiles.md: tiles 1.34-1.55x "
       "faster than the AVX-512 kernels at M = 24 on qkv, o_proj and down, "
       "1.01x on gate_up; 1.69-2.42x from M = 64 (mins)",
       {{"amx_min_m", 24}}},
  };
  return *rows;
}

}  // namespace

Da8w4Params DefaultDa8w4Params(const CpuProfile& cpu, IsaTier isa) {
  Da8w4Params p = BaseDa8w4Params(cpu, isa);
  for (const DefaultsRow* row : MatchingRows(Da8w4Rows(), cpu, isa)) {
    // Every row applies (tests/default_rows_test.cc).
    if (absl::StatusOr<Da8w4Params> q = ApplyDa8w4Params(row->params, p, isa);
        q.ok()) {
      p = *q;
    }
  }
  return p;
}

const std::vector<DefaultsRow>& Da8w4DefaultsRows() { return Da8w4Rows(); }

Da8w4Params ResolveDa8w4Params(const CpuProfile& cpu, IsaTier isa,
                               const LayerDesc& desc) {
  return ResolveParams(kDa8w4Family, DefaultDa8w4Params(cpu, isa),
                       LookupTuning(cpu, isa, desc), isa);
}

absl::Status CheckDa8w4Params(const Da8w4Params& p, IsaTier isa) {
  // The tiles' registers and the chunk limit, as the generator's plans
  // (jit/da8w4_gemm_plan.h) give them.
  struct Tile {
    const char* what;
    int mr, nblk;
    bool decoded;
  };
  for (const Tile& t : {Tile{"tile", p.mr, p.nblk, false},
                        Tile{"small_m_nblk tile", 1, p.small_m_nblk, false},
                        Tile{"panel tile", p.panel_mr, p.panel_nblk, true}}) {
    if (absl::Status s =
            MakeDa8w4GemmPlan(isa, t.mr, t.nblk, t.decoded).status();
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "da8w4 ", t.what, ": ", s.message(), " on ", ToString(isa)));
    }
  }
  if (p.handover_m < 0) {
    return absl::InvalidArgumentError("da8w4 handover_m < 0");
  }
  const int max_chunk = Da8w4MaxChunkQuads(isa);
  if (p.chunk_quads < 1 || p.chunk_quads > max_chunk) {
    return absl::InvalidArgumentError(absl::StrCat(
        "da8w4 chunk_quads ", p.chunk_quads, " not in [1, ", max_chunk, "]"));
  }
  if (p.panel_min_m < 0) {
    return absl::InvalidArgumentError("da8w4 panel_min_m < 0");
  }
  if (p.panel_bytes < 1) {
    return absl::InvalidArgumentError("da8w4 panel_bytes < 1");
  }
  if (absl::Status s = CheckPrefetchDistance(p.prefetch_distance); !s.ok()) {
    return s;
  }
  if (p.amx_mr < 1 || p.amx_mr > kDa8w4AmxMaxRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "da8w4 amx_mr ", p.amx_mr, " not in [1, ", kDa8w4AmxMaxRows, "]"));
  }
  if (p.amx() && !TierHas(isa, IsaFeature::kAmxInt8)) {
    return absl::InvalidArgumentError(
        absl::StrCat("da8w4 amx_min_m ", p.amx_min_m, ": ", ToString(isa),
                     " has no AMX tiles"));
  }
  return absl::OkStatus();
}

absl::Span<const ParamField<Da8w4Params>> Da8w4ParamTable() {
  return kDa8w4Table;
}

absl::StatusOr<Da8w4Params> ApplyDa8w4Params(const ParamMap& map,
                                             const Da8w4Params& base,
                                             IsaTier isa) {
  return ApplyParams(kDa8w4Family, map, base, isa);
}

}  // namespace w4jit::internal
