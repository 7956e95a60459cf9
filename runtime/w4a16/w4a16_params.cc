#include "runtime/w4a16/w4a16_params.h"

#include <mutex>
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

struct OverrideState {
  std::mutex mu;
  std::function<void(W4a16Params*)> edit;
};

OverrideState& GetOverride() {
  static OverrideState* state = new OverrideState;  // never destroyed
  return *state;
}

// The base values for the tier's vector width, on any CPU; the rows below
// change some of them per CPU class.
W4a16Params BaseW4a16Params(IsaTier isa) {
  W4a16Params p;
  const bool avx512 = TraitsOf(isa).evex;
  // Widest vectors the tier has: half the instructions per weight.
  p.vector_bits = avx512 ? 512 : 256;
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
  // K block of a panel: 1024 x 32 f32 = 128 KB, L2-resident on Zen 3;
  // measured here (4096 x 4096, M = 256, one thread): kc 1024 took 104-112
  // ms, 256 took 112-120, 2048+ were slower (panel leaves L2). zmm panels
  // are twice as wide: 512 keeps them at 128 KB (a guess).
  p.kc = avx512 ? 512 : 1024;
  // Rows per dequantized panel: the dequantization (~0.6 instructions per
  // weight) is then ~5% of the FMAs; 48 / 192 were no better here.
  p.mc = 96;
  // Tall int4 tile (batched decode, M = 8..15 on AVX2): weights decoded
  // into registers once per tall_mr rows. Derived from the register file:
  // AVX2: 5 rows x 2 ymm = 10 accumulators + 2 x 2 decoded vectors + 1
  // broadcast = 15 of 16 ymm, 2 FMAs per broadcast (Zen 3 issues about one
  // broadcast per cycle: 8 x 1, one broadcast per FMA, measured 1.1x
  // slower). Measured on Zen 3, 2 threads, 4096 x 4096, min of 3 runs
  // (2026-12-03): M = 8: 1822 us (5 x 2) vs 2011 (8 x 1), 1983 (4 x 2),
  // 2319 (panels); M = 16: 3977 vs 3725 (panels); M = 64: 15927 vs 13307.
  // zmm (broadcasts embedded in the FMA, no broadcast register): 12 rows x
  // 2 zmm = 24 accumulators + 2 decoded + 3 decode constants = 29 of 32;
  // the bf16 flavour 24 + 2 + the vpermw table. Not measured on AVX-512.
  p.tall_mr = avx512 ? 12 : 5;
  p.tall_vectors = 2;
  // From M = 3 on AVX2: the 2-row tile decodes the weights once per two
  // rows, so M = 3..7 decoded them 2-4 times, and decoding was ~40% of the
  // tile's vector instructions then (vpmovsxbd, 2 vpand, vpsubd, 2
  // vcvtdq2ps per 16 weights against 4 FMAs; the byte decode since has one
  // vpand and no vpsubd): it was FP-pipe bound at ~50% of the FMA peak. `w4jit
  // sweep --m=2,...,7` (Zen 3, 2 threads, 2026-12-05, the three Llama-3-8B
  // shapes 6144/4096/4096 x 4096 and 4096 x 14336, interleaved against the
  // defaults, median): tall_min_m = 3 gained 1.04-1.24x at M = 3, 1.18-1.34x at
  // 4, 1.36-1.48x at 5, 1.16-1.22x at 7 and level at 6 (5 + 1 rows); 2 lost
  // 13-20% at M = 2. On zmm the small tile already has 4 rows: 8 stays until
  // measured.
  p.tall_min_m = avx512 ? 8 : 3;
  // Where the panel path takes over from the int4 kernel. Before the tall
  // tile (Zen 3, 2 threads, 4096 x 4096 and 6144 x 4096, min of 20,
  // 2026-12-03) panels won from M = 8 over the 2-row tile; the 5 x 2 tall
  // tile beats them at M = 8 (1.27x) and ties at 16..32, panels win at 64
  // (numbers at tall_mr). On zmm the tall tile's 12 rows cover M = 8..15
  // in one or two tiles, panels (6-row tiles) from 16 on (a guess).
  p.gemm_min_m = 16;
  // No software prefetch: the hardware's alone, until a row says (the
  // measurements are at the rows).
  p.prefetch_distance = 0;
  return p;
}

// Where a CPU class differs from the base values.
const std::vector<DefaultsRow>& W4a16Rows() {
  static const auto* rows = new std::vector<DefaultsRow>{
      // bf16 dot products on Zen 4/5: vdpbf16ps does twice the MACs of an
      // FMA per instruction (peaks of the first runs: bf16-dot zmm 232
      // against f32 FMA 115 GMAC/s on Zen 4, 456 against ~228 on Zen 5).
      {"zen4",
       IsaTier::kAvx512Bf16,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-03-zen4-first-run.md",
       {{"flavor", 2}}},
      {"zen5",
       IsaTier::kAvx512Bf16,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-03-zen5-first-run.md",
       {{"flavor", 2}}},
      {"zen5-fp256",
       IsaTier::kAvx512Bf16,
       IsaTier::kAvx512Bf16,
       Evidence::kGuessed,
       "as zen5 (a 256-bit datapath, like Zen 4)",
       {{"flavor", 2}}},
      // Software prefetch: the int4 kernel reads one sequential stream per
      // thread (a block's
      // weights are contiguous), which the hardware prefetchers alone keep too
      // few lines ahead of at DRAM rates. Measured on Zen 5 (EPYC VM, 2
      // threads, 2026-12-03, `w4jit bench --model=llama3-8b --layers=4
      // --prefetch=0,...,16384`, interleaved with the DRAM read): M = 1
      // streamed at 62-71% of the read without prefetch and 76-94% at 8192
      // bytes ahead (4096: 72%, 12288 and 16384 level with 8192); hot
      // single layers were no slower. On Zen 4 (EPYC VM, 2 threads,
      // 2026-12-04, three interleaved rounds of --layers=8 --prefetch=0,4096,
      // 8192 with the octet-packed dot kernel) M = 1 streamed at 91-95% of the
      // read's p50 at 4096, 90-95% without, 84-88% at 8192; the min was best at
      // 4096 (82-95% of the read's best against 69-77% without). On Zen 3
      // (AVX2, EPYC VM, 2 threads, 2026-12-05, the f32 int4 kernel's byte
      // decode, `--model=llama3-8b --layers=8 --prefetch=0,2048,4096,8192`,
      // interleaved) M = 1 took 48.5 / 45.0 ms (p50 / min) without, 41.8 /
      // 39.2 at 2048, 40.2 / 37.7 at 4096, 39.6 / 37.2 at 8192 (p90 1.7x the
      // min there); single layers from DRAM 1.19-1.25x faster at 4096 by min,
      // hot ones level (docs/performance/2026-12-05-zen3-int4-byte-decode.md).
      // The kernel of before, half as fast hot, gained only 1.07x.
      {"zen5",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-03-zen5-first-run.md: M = 1 at 76-94% of "
       "the read at 8192 bytes ahead, 62-71% without",
       {{"prefetch_distance", 8192}}},
      {"zen5-fp256",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
       Evidence::kGuessed,
       "as zen5",
       {{"prefetch_distance", 8192}}},
      {"zen4",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-04-zen4-second-run.md: best min at 4096",
       {{"prefetch_distance", 4096}}},
      {"zen3",
       IsaTier::kAvx2,
       IsaTier::kAvx2,
       Evidence::kMeasured,
       "docs/performance/2026-12-05-zen3-int4-byte-decode.md: single layers "
       "from DRAM 1.19-1.25x faster at 4096",
       {{"prefetch_distance", 4096}}},
      // Intel Xeon with AVX-512 (Emerald Rapids VM, family 6 model 0xCF, 2
      // threads, 2026-12-05, `w4jit bench --model=llama3-8b --layers=4
      // --m=1,4 --prefetch=0,4096,8192` and the same for gpt-oss-20b,
      // interleaved with the DRAM read): M = 1 streamed at 43-44% of the
      // read without prefetch, 75-76% at 4096 and 75-78% at 8192
      // (gpt-oss-20b T = 1: 45% -> 77% / 76-78%; T = 4 43% -> 72% /
      // 71-72%). The f32-FMA flavour stays (the base): vdpbf16ps was slower
      // than f32 FMA on the Intel development machine
      // (design/performance.md). Other CPUs keep the hardware's prefetch
      // alone until measured.
      {"intel-avx512",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
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
    // The rows hold only names and values ApplyW4a16ParamMap takes
    // (tests/default_rows_test.cc).
    ApplyW4a16ParamMap(row->params, &p).IgnoreError();
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

W4a16Params ResolveW4a16Params(const CpuProfile& cpu, IsaTier isa,
                               const LayerDesc& desc) {
  const W4a16Params defaults = DefaultW4a16Params(cpu, isa);
  W4a16Params p = defaults;
  std::optional<ParamMap> tuned = LookupTuning(cpu, isa, desc);
  absl::Status tuned_ok;
  if (tuned) tuned_ok = ApplyW4a16ParamMap(*tuned, &p);
  ApplyW4a16ParamsOverride(&p);
  // Checked once, here: a tuning entry this tier cannot run falls back to
  // the defaults with one warning, never to the reference. (Parameters
  // from the defaults and the test override alone are checked where the
  // kernels are made, which names the reason the layer falls back.)
  if (tuned && tuned_ok.ok()) tuned_ok = CheckW4a16Params(p, isa);
  if (!tuned_ok.ok()) {
    Log(LogLevel::kWarning,
        absl::StrCat("ignoring the W4A16 tuning entry (", tuned_ok.message(),
                     "); using the defaults"));
    p = defaults;
    ApplyW4a16ParamsOverride(&p);
  }
  return p;
}

absl::Status ApplyW4a16ParamMap(const ParamMap& map, W4a16Params* p) {
  for (const auto& [name, value] : map) {
    if (name == "flavor") {
      if (value != 1 && value != 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            "w4a16 flavor = ", value, " is not 1 (f32 FMA) or 2 (bf16 dot)"));
      }
      p->flavor = value == 1 ? Flavor::kF32Fma : Flavor::kBf16Dot;
    } else if (name == "vector_bits") {
      p->vector_bits = static_cast<int>(value);
    } else if (name == "block_vectors") {
      p->block_vectors = static_cast<int>(value);
    } else if (name == "gemv_mr") {
      p->gemv_mr = static_cast<int>(value);
    } else if (name == "gemm_mr") {
      p->gemm_mr = static_cast<int>(value);
    } else if (name == "gemm_nr_vectors") {
      p->gemm_nr_vectors = static_cast<int>(value);
    } else if (name == "kc") {
      p->kc = value;
    } else if (name == "mc") {
      p->mc = value;
    } else if (name == "prefetch_distance") {
      p->prefetch_distance = static_cast<int>(value);
    } else if (name == "meta_16bit") {
      if (value != 0 && value != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("w4a16 meta_16bit = ", value, " is not 0 or 1"));
      }
      p->meta_16bit = value == 1;
    } else if (name == "tall_mr") {
      p->tall_mr = static_cast<int>(value);
    } else if (name == "tall_vectors") {
      p->tall_vectors = static_cast<int>(value);
    } else if (name == "tall_min_m") {
      p->tall_min_m = value;
    } else if (name == "gemm_min_m") {
      p->gemm_min_m = value;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown w4a16 parameter \"", name, "\""));
    }
  }
  return absl::OkStatus();
}

ScopedW4a16ParamsOverride::ScopedW4a16ParamsOverride(
    std::function<void(W4a16Params*)> edit) {
  OverrideState& s = GetOverride();
  std::lock_guard<std::mutex> lock(s.mu);
  previous_ = std::move(s.edit);
  s.edit = std::move(edit);
}

ScopedW4a16ParamsOverride::~ScopedW4a16ParamsOverride() {
  OverrideState& s = GetOverride();
  std::lock_guard<std::mutex> lock(s.mu);
  s.edit = std::move(previous_);
}

void ApplyW4a16ParamsOverride(W4a16Params* params) {
  OverrideState& s = GetOverride();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.edit) s.edit(params);
}

}  // namespace w4jit::internal
