// Tunable parameters of the DA8W4 JIT path (register tile, blocking, the
// GEMV -> GEMM handover) with per-ISA defaults, and the entry point that
// takes explicit parameters (for tuning sweeps and tests).
#ifndef W4JIT_RUNTIME_DA8W4_DA8W4_PARAMS_H_
#define W4JIT_RUNTIME_DA8W4_DA8W4_PARAMS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/default_rows.h"
#include "dispatch/param_table.h"
#include "dispatch/tuning.h"
#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct Da8w4Params {
  // GEMM register tile: mr rows x nblk column blocks (NB = 2 * lanes
  // columns each), within the registers of its plan
  // (jit/da8w4_gemm_plan.h).
  int mr = 6;
  int nblk = 1;
  // Column blocks of a tile with fewer rows than mr (decode, and the last
  // rows of M): as many as the registers allow, at most this.
  int small_m_nblk = 4;
  // M <= handover_m: the work is split over column blocks only, so the
  // weights stream from memory exactly once (GEMV-style). Above it, over
  // M x N tiles.
  int handover_m = 16;
  // Quads unrolled per chunk (AVX2: also the int16 flush period, <= 8).
  int chunk_quads = 8;
  // Packed weight bytes of the column panel that all row tiles of a work
  // item sweep before moving on: sized to stay in L2 (decoded bytes when
  // the panel is decoded).
  int64_t panel_bytes = 256 * 1024;
  // M >= panel_min_m (and above the hand-over): each work item decodes its
  // column panel once into per-thread scratch (runtime/da8w4/da8w4_decode.h)
  // and runs the panel_mr x panel_nblk tile on it, whose inner loop is only
  // loads and dot products. Below it the tiles unpack nibbles in the loop,
  // which costs less than a decode when there are few row tiles.
  // kNoPanels (or more, from a tuning file): never decode, and no panel
  // kernels are built.
  static constexpr int kNoPanels = 1 << 30;
  int panel_min_m = 32;
  bool panels() const { return panel_min_m < kNoPanels; }
  int panel_mr = 6;
  int panel_nblk = 1;
  // The tiles that unpack nibbles in the loop (M below panel_min_m)
  // prefetch each column block's stream this many bytes ahead (a multiple
  // of 64 up to kMaxPrefetchDistance; 0: no prefetch instructions).
  int prefetch_distance = 0;
  // AMX tier only (dispatch/isa_traits.h): from M >= amx_min_m (and above
  // the hand-over) each work item decodes its panel and runs the tile
  // kernel (jit/da8w4_amx_generator.h) on row tiles of up to amx_mr rows
  // (1..32) instead of the vector panel tiles. kNoAmx (the base value):
  // never; a layer whose groups the tiles cannot step (a group or K not a
  // multiple of 32) keeps the vector kernels.
  static constexpr int kNoAmx = 1 << 30;
  int amx_min_m = kNoAmx;
  bool amx() const { return amx_min_m < kNoAmx; }
  int amx_mr = 32;
  // Store the packed scales as bf16 or f16 where every one is exact in it
  // (jit/da8w4_layout.h). Tuning name "meta_16bit" (0 / 1), as W4A16's.
  bool scales_16bit = true;
};

// The defaults for `isa` on `cpu` (each commented with where it came from).
Da8w4Params DefaultDa8w4Params(const CpuProfile& cpu, IsaTier isa);
// The per-CPU-class rows DefaultDa8w4Params applies over the base values
// (dispatch/default_rows.h); for the tests and `w4jit info`.
const std::vector<DefaultsRow>& Da8w4DefaultsRows();

// OK if the kernels can be built with `params` on `isa`.
absl::Status CheckDa8w4Params(const Da8w4Params& params, IsaTier isa);

// The tunable parameters by name (dispatch/param_table.h): "mr", "nblk",
// "small_m_nblk", "handover_m", "chunk_quads", "panel_bytes",
// "panel_min_m", "panel_mr", "panel_nblk", "prefetch_distance",
// "meta_16bit", "amx_min_m", "amx_mr".
absl::Span<const ParamField<Da8w4Params>> Da8w4ParamTable();

// `base` with a tuning entry's (or a defaults row's) values, checked for
// `isa` (CheckDa8w4Params); unknown names, values out of range and sets
// the tier cannot run are errors, and nothing is applied.
absl::StatusOr<Da8w4Params> ApplyDa8w4Params(const ParamMap& map,
                                             const Da8w4Params& base,
                                             IsaTier isa);

// The parameters a layer runs with, resolved in one place (ResolveParams
// in dispatch/param_table.h): the defaults (base values and the CPU
// class's rows), the layer's tuning entry through ApplyDa8w4Params (one
// warning and the defaults if it fails), the test override.
Da8w4Params ResolveDa8w4Params(const CpuProfile& cpu, IsaTier isa,
                               const LayerDesc& desc);

// Test hook: while it lives, layers created through the public API get
// their DA8W4 parameters edited after defaults and tuning.
using ScopedDa8w4ParamsOverride = ScopedParamsOverride<Da8w4Params>;

// MakeDa8w4JitKernel (runtime/jit_kernels.h) with explicit parameters.
absl::StatusOr<std::unique_ptr<LinearKernel>> MakeDa8w4JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier isa, const Da8w4Params& params, std::string* why_not);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_DA8W4_DA8W4_PARAMS_H_
