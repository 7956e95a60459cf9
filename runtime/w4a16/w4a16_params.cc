#include "runtime/w4a16/w4a16_params.h"

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/log.h"
#include "dispatch/default_rows.h"
#include "dispatch/isa_traits.h"
#include "jit/emit_util.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_gemv_plan.h"
#include "jit/w4a16_panel_generator.h"
#include "runtime/w4a16/w4a16_kernel_lookup.h"

namespace w4jit::internal {
namespace {

// The base values for the tier's vector width, on any CPU; the rows below
// change some of them per CPU class.
W4a16Params BaseW4a16Params(IsaTier isa) {
  W4a16Params p;
  // The reference tier has no vectors: it gets AVX2's values (no kernel
  // is built from them there).
  const IsaTraits& traits =
      TraitsOf(TraitsOf(isa).vector_bytes > 0 ? isa : IsaTier::kAvx2);
  const bool avx512 = traits.Has(IsaFeature::kAvx512);
  // Widest vectors the tier has: half the instructions per weight.
  p.vector_bits = 8 * traits.vector_bytes;
  // f32 FMA; the bf16-dot flavour where a row says (Zen 4/5).
  p.flavor = Flavor::kF32Fma;
  // 4 vectors per block: 4 accumulator chains per row (x2 k-even/odd for a
  // one-row tile) hide the FMA latency; 2 (16 columns) was no faster for
  // the panel path here and gives a one-row tile too few chains.
  p.block_vectors = 4;
  // Int4 kernel row tile: 2 rows is the tallest AVX2 tile that keeps x in
  // registers (16 ymm); 3 rows (broadcast per use) was no faster here. On
  // zmm, embedded broadcasts leave room for 4 (a guess from the register
  // count).
  p.gemv_mr = avx512 ? 4 : 2;
  // Panel microkernel: the classic 6 x 16 AVX2 tile (12 accumulators, 2
  // panel vectors, 1 broadcast) and 6 x 64 on zmm (24 + 4 + 1 of 32).
  // A published register budget, not a measurement.
  p.gemm_mr = 6;
  p.gemm_nr_vectors = avx512 ? 4 : 2;
  // K block of a panel: 1024 x 32 f32 = 128 KB, L2-resident on Zen 3
  // (measured: docs/performance/2026-12-03-zen3-dev-vm.md, at its end);
  // zmm panels are twice as wide: 512 keeps them at 128 KB (a guess).
  p.kc = avx512 ? 512 : 1024;
  // Rows per dequantized panel: the dequantization (~0.6 instructions per
  // weight) is then ~5% of the FMAs; 48 / 192 were no better here.
  p.mc = 96;
  // Tall int4 tile (batched decode): weights decoded into registers once
  // per tall_mr rows. AVX2 5 x 2 ymm, 2 FMAs per broadcast (measured on Zen
  // 3: docs/performance/2026-12-03-zen3-dev-vm.md, at its end); zmm 12 x 2
  // (24 accumulators of 32; not measured on AVX-512).
  p.tall_mr = avx512 ? 12 : 5;
  p.tall_vectors = 2;
  // From M = 3 on AVX2, where the 2-row tile decoded every weight 2-4
  // times (docs/performance/2026-12-05-zen3-int4-byte-decode.md, at its
  // end); on zmm the small tile has 4 rows already: 8 until measured.
  p.tall_min_m = avx512 ? 8 : 3;
  // Where the panel path takes over: the 5 x 2 tall tile beats panels at M =
  // 8 and ties at 16..32 on Zen 3 (the run at tall_mr); on zmm the tall
  // tile's 12 rows cover M = 8..15, panels from 16 on (a guess).
  p.gemm_min_m = 16;
  // No software prefetch: the hardware's alone, until a row says (the
  // measurements are at the rows).
  p.prefetch_distance = 0;
  return p;
}

// The tuning names (dispatch/param_table.h); the check does the rest.
constexpr int64_t kMaxRows = 64;
constexpr int64_t kMaxVectors = 64;
constexpr int64_t kMaxM = int64_t{1} << 40;
const ParamField<W4a16Params> kW4a16Table[] = {
    {"flavor", &W4a16Params::flavor, 1, 2},
    {"vector_bits", &W4a16Params::vector_bits, 1, 4096},
    {"block_vectors", &W4a16Params::block_vectors, 1, kMaxVectors},
    {"gemv_mr", &W4a16Params::gemv_mr, 1, kMaxRows},
    {"gemm_mr", &W4a16Params::gemm_mr, 1, kMaxRows},
    {"gemm_nr_vectors", &W4a16Params::gemm_nr_vectors, 1, kMaxVectors},
    {"kc", &W4a16Params::kc, 2, int64_t{1} << 30},
    {"mc", &W4a16Params::mc, 1, int64_t{1} << 30},
    {"tall_mr", &W4a16Params::tall_mr, 1, kMaxRows},
    {"tall_vectors", &W4a16Params::tall_vectors, 1, kMaxVectors},
    {"tall_min_m", &W4a16Params::tall_min_m, 1, kMaxM},
    {"gemm_min_m", &W4a16Params::gemm_min_m, 1, kMaxM},
    {"prefetch_distance", &W4a16Params::prefetch_distance, 0,
     kMaxPrefetchDistance},
    {"meta_16bit", &W4a16Params::meta_16bit, 0, 1},
    {"amx_min_m", &W4a16Params::amx_min_m, 1, W4a16Params::kNoAmx, true},
    {"amx_kc", &W4a16Params::amx_kc, 32, int64_t{1} << 20},
    {"amx_kc_small", &W4a16Params::amx_kc_small, 32, int64_t{1} << 20},
    {"amx_mc", &W4a16Params::amx_mc, 1, int64_t{1} << 30},
    {"amx_nc", &W4a16Params::amx_nc, 1, int64_t{1} << 30},
    {"amx_row_blocks", &W4a16Params::amx_row_blocks, 1, 2},
};
const ParamFamily<W4a16Params> kW4a16Family = {"W4A16", kW4a16Table,
                                               &CheckW4a16Params};

// Where a CPU family differs from the base values (a row for "zen5" holds
// for "zen5-fp256" too: dispatch/default_rows.h). Each row names its run;
// the run's file has the measurements.
const std::vector<DefaultsRow>& W4a16Rows() {
  static const auto* rows = new std::vector<DefaultsRow>{
      // bf16 dot products: vdpbf16ps does twice the MACs of an FMA per
      // instruction (Zen 4: 232 against 115 GMAC/s; Zen 5: 456 against 228).
      {"zen4",
       IsaFeature::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-03-zen4-first-run.md",
       {{"flavor", 2}}},
      {"zen5",
       IsaFeature::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-03-zen5-first-run.md",
       {{"flavor", 2}}},
      // Software prefetch of the int4 kernel's one weight stream per
      // thread, which the hardware prefetchers keep too few lines ahead of
      // at DRAM rates (the measurements at the end of each run's file).
      {"zen5",
       IsaFeature::kAvx512,
       Evidence::kMeasured,
       "docs/performance/2026-12-03-zen5-first-run.md: M = 1 at 76-94% of "
       "the read at 8192 bytes ahead, 62-71% without",
       {{"prefetch_distance", 8192}}},
      {"zen4",
       IsaFeature::kAvx512,
       Evidence::kMeasured,
       "docs/performance/2026-12-04-zen4-second-run.md: best min at 4096",
       {{"prefetch_distance", 4096}}},
      {"zen3",
       IsaFeature::kAvx2,
       Evidence::kMeasured,
       "docs/performance/2026-12-05-zen3-int4-byte-decode.md: single layers "
       "from DRAM 1.19-1.25x faster at 4096",
       {{"prefetch_distance", 4096}}},
      // The AMX tiles for bf16 x from M = 4 on (jit/w4a16_amx_generator.h).
      // With the panel decoder's prefetch (2026-12-07) they beat the int4
      // kernel from M = 4 with weights from DRAM (1.14-1.17x at 4,
      // 1.5-1.8x at 6-8; they lose at 2 and 3) and decode the dense 1B
      // 1.09x (B = 4) and 1.39x (B = 8) faster inside vLLM
      // (docs/performance/2026-12-07-xeon-amx-prefetch.md).
      // K blocks of 128 at every M: with two row tiles per call, a 16 KB
      // panel that stays in L1 between the decoder and the tiles beat
      // 1024-k blocks from M = 96 on too. In the bench: 1.08-1.3x at 96,
      // 0.96-1.11x at 256-512. Against vLLM's own kernel in its venv:
      // 1.03-1.11x better at 96, level to 1.04x at 256, level at 512
      // (docs/performance/2026-12-07-xeon-amx-row-blocks.md).
      {"intel-avx512",
       IsaFeature::kAmxBf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-07-xeon-amx-prefetch.md; amx_kc: "
       "docs/performance/2026-12-07-xeon-amx-row-blocks.md",
       {{"amx_min_m", 4}, {"amx_kc", 128}}},
      // The f32-FMA flavour stays on Intel (vdpbf16ps was slower there).
      {"intel-avx512",
       IsaFeature::kAvx512,
       Evidence::kMeasured,
       "docs/performance/2026-12-05-xeon-amx-defaults.md: M = 1 at 75-76% "
       "of the read at 4096 bytes ahead, 43-44% without",
       {{"prefetch_distance", 4096}}},
  };
  return *rows;
}

}  // namespace

W4a16Params DefaultW4a16Params(const CpuProfile& cpu, IsaTier isa) {
  W4a16Params p = BaseW4a16Params(isa);
  for (const DefaultsRow* row : MatchingRows(W4a16Rows(), cpu, isa)) {
    // Every row applies (tests/default_rows_test.cc).
    if (absl::StatusOr<W4a16Params> q = ApplyW4a16Params(row->params, p, isa);
        q.ok()) {
      p = *q;
    }
  }
  return p;
}

const std::vector<DefaultsRow>& W4a16DefaultsRows() { return W4a16Rows(); }

absl::Status CheckW4a16Params(const W4a16Params& p, IsaTier isa) {
  // A width some tier's vectors have (dispatch/isa_traits.h).
  if (p.vector_bits % 8 != 0 ||
      TraitsOf(TierOfVectorBytes(p.vector_bits / 8)).vector_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "vector_bits = %d is not the width of an ISA tier", p.vector_bits));
  }
  if (p.block_vectors < 1 || p.gemv_mr < 1 || p.gemm_mr < 1 || p.tall_mr < 1 ||
      p.tall_vectors < 1 || p.tall_min_m < 1 || p.gemm_nr_vectors < 1 ||
      p.kc < 2 || p.mc < 1 || p.gemm_min_m < 1) {
    return absl::InvalidArgumentError(
        "W4A16 parameters must be positive (kc >= 2)");
  }
  if (absl::Status s = CheckPrefetchDistance(p.prefetch_distance); !s.ok()) {
    return s;
  }
  if (p.amx() && !TierHas(isa, IsaFeature::kAmxBf16)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "w4a16 amx_min_m %d: %s has no AMX tiles", p.amx_min_m, ToString(isa)));
  }
  if (p.amx_kc < 32) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "w4a16 amx_kc %d is below one tile step (32)", p.amx_kc));
  }
  if (p.block_vectors % p.tall_vectors != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tall_vectors = %d does not divide block_vectors = %d",
                        p.tall_vectors, p.block_vectors));
  }
  if (p.block_vectors % p.gemm_nr_vectors != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "gemm_nr_vectors = %d does not divide block_vectors = %d",
        p.gemm_nr_vectors, p.block_vectors));
  }
  // What the tier can run: the vector width, and the registers of the
  // int4 tiles (small and tall, f32 flavour, as the kernel lookup builds
  // them; jit/w4a16_gemv_plan.h) and of the panel tile.
  const IsaTier vector_tier = TierOfVectorBytes(p.vector_bits / 8);
  if (!HasFeaturesOf(isa, vector_tier)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "vector_bits = %d needs %s", p.vector_bits, ToString(vector_tier)));
  }
  const int lanes = TraitsOf(vector_tier).lanes32();
  W4a16GemvConfig int4;
  int4.isa = vector_tier;
  int4.nr = p.block_vectors * lanes;
  for (const W4a16GemvConfig& c : W4a16Int4Configs(p, p.flavor, int4)) {
    if (absl::Status s = MakeW4a16GemvPlan(c, c.mr).status(); !s.ok()) {
      return s;
    }
  }
  W4a16PanelConfig panel;
  panel.isa = vector_tier;
  panel.mr = p.gemm_mr;
  panel.nr = p.gemm_nr_vectors * lanes;
  panel.stride = int4.nr;
  panel.n = panel.nr;
  return CheckW4a16PanelConfig(panel);
}

absl::Span<const ParamField<W4a16Params>> W4a16ParamTable() {
  return kW4a16Table;
}

absl::StatusOr<W4a16Params> ApplyW4a16Params(const ParamMap& map,
                                             const W4a16Params& base,
                                             IsaTier isa) {
  return ApplyParams(kW4a16Family, map, base, isa);
}

// silu_mul: a gate vector and its up vector share a block and a panel
// tile, so every width must be an even number of vectors. The layer decides
// this, not the CPU or a tuning, so it is the last step of the resolution;
// parameters given directly (MakeW4a16JitKernel with params) that do not
// fit fail the kernels' config check and name why.
W4a16Params WithSiluMulTiles(W4a16Params params) {
  if (params.block_vectors % 2 != 0) {
    params.block_vectors = std::max(2, params.block_vectors - 1);
  }
  if (params.gemm_nr_vectors % 2 != 0 ||
      params.block_vectors % params.gemm_nr_vectors != 0) {
    params.gemm_nr_vectors = 2;
  }
  if (params.tall_vectors % 2 != 0 ||
      params.block_vectors % params.tall_vectors != 0) {
    // A pair of vectors per tall tile: as many rows as its plan holds
    // (jit/w4a16_gemv_plan.h).
    params.tall_vectors = 2;
    W4a16GemvConfig pair;
    pair.isa = TierOfVectorBytes(params.vector_bits / 8);
    pair.nr = params.block_vectors * TraitsOf(pair.isa).lanes32();
    pair.tile_vectors =
        params.block_vectors == params.tall_vectors ? 0 : params.tall_vectors;
    params.tall_mr = std::min(params.tall_mr, W4a16GemvMaxRows(pair));
  }
  return params;
}

W4a16Params ResolveW4a16Params(const CpuProfile& cpu, IsaTier isa,
                               const LayerDesc& desc) {
  const W4a16Params p =
      ResolveParams(kW4a16Family, DefaultW4a16Params(cpu, isa),
                    LookupTuning(cpu, isa, desc), isa);
  return desc.epilogue.silu_mul ? WithSiluMulTiles(p) : p;
}

}  // namespace w4jit::internal
