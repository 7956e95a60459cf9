#include "runtime/da8w4/da8w4_params.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "dispatch/default_rows.h"
#include "dispatch/isa_traits.h"
#include "jit/da8w4_gemm_plan.h"
#include "jit/emit_util.h"

namespace w4jit::internal {

namespace {

// The base values for the tier's vector width, on any CPU (the panel size
// from the CPU's L2); the rows below change some of them per CPU class.
Da8w4Params BaseDa8w4Params(const CpuProfile& cpu, IsaTier isa) {
  Da8w4Params p;
  if (TraitsOf(isa).evex) {
    // Guess from the issue slots (no AVX-512 machine measured
    // yet): 6 rows x 2 blocks (4 zmm) = 24 int32 accumulators, ~80% of
    // issue slots vpdpbusd.
    p.mr = 6;
    p.nblk = 2;
    // 4 blocks: 4 weight streams per thread (a block's quads are
    // contiguous) and 8 accumulators, plenty at M = 1, where the weight
    // stream bounds the kernel. Measured on Zen 5 (EPYC VM, 2 threads,
    // 2026-12-03, `w4jit bench --model=llama3-8b --tunings`, interleaved
    // with the DRAM read): M = 1 streamed at 78% / 80% of the read (p50 /
    // min) with 4 blocks against 69% / 71% with 8 on a quiet VM (84-89%
    // against 71% in loaded runs); M = 4 was level within the noise (71% /
    // 75% against 75% / 77%). 8 streams per thread read DRAM slower than
    // 4: the read probe itself gives 71-73 against 79 GB/s. Hot 4096 x
    // 4096 M = 1 was no slower.
    p.small_m_nblk = 4;
  } else {
    // Measured on Zen 3 (EPYC, family 19h model 01h, KVM, 2026-12; A/B of
    // whole layers interleaved in one process, min thread-CPU time, 1
    // thread): 4096x4096 g128 at M = 64: 6x1 106, 5x1 110, 4x1 105, 3x2 100,
    // 2x3 95 GMAC/s per core (int16-pair peak 142, 3-op emulation 90).
    // 6 x 1 uses all 16 ymm and has the least unpack work per MAC.
    p.mr = 6;
    p.nblk = 1;
    // Measured (same method), 1024x4096 M = 1 from L3: 1, 2, 3, 4, 6 blocks
    // 44, 51, 54, 54, 51 GMAC/s per core; DRAM-streaming 4096x4096:
    // 21, 27, 28, 28, 27.
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
  if (TraitsOf(isa).evex) {
    // Guess (no AVX-512 machine here): the largest tile the 32 zmm hold on
    // a decoded panel, 14 rows x 1 block = 28 accumulators + 2 weight
    // registers + 1 broadcast; per quad 16 loads feed 28 vpdpbusd.
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

// Where a CPU class differs from the base values.
const std::vector<DefaultsRow>& Da8w4Rows() {
  static const auto* rows = new std::vector<DefaultsRow>{
      // Measured on Zen 4 (EPYC VM, 2 threads, 2026-12-04, `w4jit bench
      // --model=llama3-8b --layers=2 --prefill-m=32,...,1024 --tunings=
      // default,<no panels>`, three interleaved runs): the in-loop tiles beat
      // the decoded panels at every M, by 20-26% at M = 32, 10-15% at 64,
      // 2-8% at 128, 4-5% at 256 and 512, 2-4% at 1024. Zen 4 issues the
      // in-loop unpacking (and, shift) beside the double-pumped vpdpbusd,
      // while the panel costs a decode pass and twice the bytes through L2.
      // The qwen3-30b-a3b fused MoE was level. Zen 5 and Intel keep the
      // panels until measured.
      {"zen4",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-04-zen4-second-run.md: in-loop tiles "
       "faster than decoded panels at every M from 32 to 1024",
       {{"panel_min_m", Da8w4Params::kNoPanels}}},
      // Measured on the same VM (2026-12-04, `w4jit bench --model=llama3-8b
      // --layers=4 --m=4,8,16 --tunings=default,<handover_m 2>`, three
      // interleaved runs; `w4jit sweep` had picked 2 from 2..64): the 6 x 2
      // tiles with the 2D split beat the one-pass small-M tiles from M = 3
      // on, p50 by 10-24% at M = 4, 10-13% at 8 and 2-13% at 16 (min by
      // 4-17%, -3-7%, -1-11%). M = 1 and 2 keep the one-pass tiles. The
      // qwen3-30b-a3b fused MoE (short-K experts, 4-16 rows each) was level
      // within the noise in three alternating runs of each build.
      {"zen4",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-04-zen4-third-run.md: 6 x 2 tiles with the "
       "2D split 10-24% faster at M = 4",
       {{"handover_m", 2}}},
      // Intel AVX-512: software prefetch. Measured on an Intel Xeon (Emerald
      // Rapids VM, family 6 model 0xCF,
      // 2 threads, 2026-12-05, `w4jit bench --model=llama3-8b --layers=4
      // --m=1,4 --prefetch=0,4096,8192` and the same for gpt-oss-20b,
      // interleaved with the DRAM read; docs/performance/
      // 2026-12-05-xeon-amx-defaults.md): without software prefetch M = 1
      // streamed at 76-77% of the read (M = 4: 68%), at 4096 bytes ahead
      // 84-85% (80-81%), at 8192 84-85% (79-80%); gpt-oss-20b T = 1 79% ->
      // 83-85%, T = 4 78-79% -> 83-85% (its experts as well, through the
      // same default). Other CPUs keep the hardware's prefetch alone until
      // measured.
      {"intel-avx512",
       IsaTier::kAvx512Vnni,
       IsaTier::kAvx512Bf16,
       Evidence::kMeasured,
       "docs/performance/2026-12-05-xeon-amx-defaults.md: M = 1 at 84-85% "
       "of the read at 4096 bytes ahead, 76-77% without",
       {{"prefetch_distance", 4096}}},
  };
  return *rows;
}

}  // namespace

Da8w4Params DefaultDa8w4Params(const CpuProfile& cpu, IsaTier isa) {
  Da8w4Params p = BaseDa8w4Params(cpu, isa);
  for (const DefaultsRow* row : MatchingRows(Da8w4Rows(), cpu, isa)) {
    // The rows hold only names and values ApplyDa8w4Tuning takes
    // (tests/default_rows_test.cc).
    if (absl::StatusOr<Da8w4Params> q = ApplyDa8w4Tuning(row->params, p, isa);
        q.ok()) {
      p = *q;
    }
  }
  return p;
}

const std::vector<DefaultsRow>& Da8w4DefaultsRows() { return Da8w4Rows(); }

Da8w4Params ResolveDa8w4Params(const CpuProfile& cpu, IsaTier isa,
                               const LayerDesc& desc) {
  const Da8w4Params defaults = DefaultDa8w4Params(cpu, isa);
  std::optional<ParamMap> tuned = LookupTuning(cpu, isa, desc);
  if (!tuned) return defaults;
  // ApplyDa8w4Tuning parses and checks the result once.
  absl::StatusOr<Da8w4Params> applied = ApplyDa8w4Tuning(*tuned, defaults, isa);
  if (applied.ok()) return *applied;
  Log(LogLevel::kWarning,
      absl::StrCat("ignoring the DA8W4 tuning entry (",
                   applied.status().message(), "); using the defaults"));
  return defaults;
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
    } else if (name == "panel_min_m") {
      p.panel_min_m =
          static_cast<int>(std::min<int64_t>(value, Da8w4Params::kNoPanels));
    } else if (name == "panel_mr") {
      p.panel_mr = static_cast<int>(value);
    } else if (name == "panel_nblk") {
      p.panel_nblk = static_cast<int>(value);
    } else if (name == "prefetch_distance") {
      p.prefetch_distance = static_cast<int>(std::min<int64_t>(value, 1 << 30));
    } else if (name == "meta_16bit") {
      if (value != 0 && value != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("da8w4 meta_16bit = ", value, " is not 0 or 1"));
      }
      p.scales_16bit = value == 1;
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
