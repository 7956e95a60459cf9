// Parameters of the W4A16 JIT path: compute flavour, vector width, packed
// block width, register tiles, K/M blocking and the M at which the
// dequantize-then-GEMM path takes over from the int4 kernel. Defaults come
// per CPU profile from DefaultW4a16Params; tuning files (dispatch/tuning.h)
// and tests override them.
#ifndef W4JIT_RUNTIME_W4A16_W4A16_PARAMS_H_
#define W4JIT_RUNTIME_W4A16_W4A16_PARAMS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/default_rows.h"
#include "dispatch/kernel_key.h"
#include "dispatch/param_table.h"
#include "dispatch/tuning.h"
#include "runtime/canonical_weights.h"
#include "runtime/linear_kernel.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct W4a16Params {
  // kF32Fma or kBf16Dot. The dot flavour is used only where the layer
  // allows it (bf16 x, or f32 x with LayerDesc::allow_bf16_compute, and a
  // group and K that are multiples of 4); elsewhere the FMA flavour runs.
  Flavor flavor = Flavor::kF32Fma;
  int vector_bits = 256;  // 256 (ymm, AVX2) or 512 (zmm, AVX-512)
  int block_vectors = 4;  // NB = block_vectors * lanes columns per block
  // Rows per register tile of the int4 kernel below gemm_min_m.
  int gemv_mr = 2;
  // FMA flavour from gemm_min_m rows on: the dequantize + panel path.
  int gemm_mr = 6;          // panel microkernel rows
  int gemm_nr_vectors = 2;  // panel microkernel width (divides block_vectors)
  int64_t kc = 1024;        // K block of a dequantized panel (target)
  int64_t mc = 96;          // rows sharing one dequantized panel
  // From tall_min_m rows on (FMA flavour: up to gemm_min_m; bf16-dot
  // flavour: every larger M) the int4 kernel runs a taller, narrower
  // register tile: tall_mr rows x tall_vectors vectors (dividing
  // block_vectors). Each weight is decoded into registers once per
  // tall_mr rows instead of once per gemv_mr.
  int tall_mr = 8;
  int tall_vectors = 1;
  int64_t tall_min_m = 8;
  int64_t gemm_min_m = 8;
  // The int4 kernels and the AMX panel decoder prefetch their weight
  // stream this many bytes ahead (a multiple of 64 up to
  // kMaxPrefetchDistance; 0: no prefetch instructions).
  int prefetch_distance = 0;
  // Store the packed scales (and float zero points) as bf16 or f16 where
  // every value is exact in it (jit/w4a16_layout.h): fewer bytes per
  // weight in the stream. Tuning name "meta_16bit" (0 / 1).
  bool meta_16bit = true;
  // From amx_min_m rows on, layers whose x is bf16 (or f32 with
  // LayerDesc::allow_bf16_compute) run the AMX tile kernel
  // (jit/w4a16_amx_generator.h) instead of the vector kernels. kNoAmx (the
  // base value): never; only the amx tier accepts another value.
  static constexpr int64_t kNoAmx = int64_t{1} << 40;
  int64_t amx_min_m = kNoAmx;
  // K block of the tiles' decoded bf16 panel (rounded to whole groups):
  // NB * amx_kc * 2 bytes, 128 KB at NB = 64 and 1024 (128 on
  // intel-avx512, whose row cites its runs).
  int64_t amx_kc = 1024;
  // The K block of a row block of one or two row tiles (grouped weights
  // with exact numerics; whole groups, at most amx_kc): there the panel
  // has one or two readers, and a panel that stays in L1 between the
  // decoder and the tiles (16 KB at NB = 64 and 128) beats one the decoder
  // writes to L2 for the tiles to read back: 1.13-1.31x at M = 16-48 on
  // an Intel Xeon, one thread, 2026-12-07 (docs/amx.md).
  int64_t amx_kc_small = 128;
  // Rows (whole tiles of 32) sharing one decoded panel: the decode costs
  // about a third of the tiles' time at 96 rows.
  int64_t amx_mc = 256;
  // Columns (whole packed blocks) one K block of x is multiplied with
  // before the next K block: so that the K block stays in L2 across them
  // (x re-read from L3 for every block of 64 columns held the tiles at a
  // quarter of their peak), at mc * nc * 4 bytes of f32 scratch.
  int64_t amx_nc = 512;
  // Row tiles of one height per tile-kernel call, 1 or 2: with 2 a call
  // runs each column pair's units for two row tiles in turn, so that the
  // second reads the pair's B tiles from L1 (docs/amx.md).
  int64_t amx_row_blocks = 2;
  bool amx() const { return amx_min_m < kNoAmx; }
};

// The defaults for a CPU and the ISA tier kernels may use: the base values
// of the tier's vector width, then the rows of the CPU's class, each
// marked measured (with its run) or guessed in w4a16_params.cc.
W4a16Params DefaultW4a16Params(const CpuProfile& cpu, IsaTier isa);
// The per-CPU-class rows DefaultW4a16Params applies over the base values
// (dispatch/default_rows.h); for the tests and `w4jit info`.
const std::vector<DefaultsRow>& W4a16DefaultsRows();

// Parameters this tier can run whatever the layer: ranges and divisibility,
// the vector width, and the registers of the int4 and panel tiles.
absl::Status CheckW4a16Params(const W4a16Params& params, IsaTier isa);

// The tunable parameters by name (dispatch/param_table.h): "flavor" (1 FMA,
// 2 bf16 dot), "vector_bits", "block_vectors", "gemv_mr", "gemm_mr",
// "gemm_nr_vectors", "kc", "mc", "tall_mr", "tall_vectors", "tall_min_m",
// "gemm_min_m", "prefetch_distance", "meta_16bit", "amx_min_m", "amx_kc",
// "amx_kc_small", "amx_mc", "amx_nc", "amx_row_blocks".
absl::Span<const ParamField<W4a16Params>> W4a16ParamTable();

// `base` with a tuning entry's (or a defaults row's) values, checked for
// `isa` (CheckW4a16Params); unknown names, values out of range and sets
// the tier cannot run are errors, and nothing is applied.
absl::StatusOr<W4a16Params> ApplyW4a16Params(const ParamMap& map,
                                             const W4a16Params& base,
                                             IsaTier isa);

// The parameters a layer runs with, resolved in one place (ResolveParams
// in dispatch/param_table.h): the defaults (base values and the CPU
// class's rows), the layer's tuning entry through ApplyW4a16Params (one
// warning and the defaults if it fails), the test override; then, for a
// silu_mul layer, even tile widths (WithSiluMulTiles).
W4a16Params ResolveW4a16Params(const CpuProfile& cpu, IsaTier isa,
                               const LayerDesc& desc);

// A silu_mul layer's parameters: block, panel and tall tile widths made
// even numbers of vectors (a gate vector and its up vector share a tile).
W4a16Params WithSiluMulTiles(W4a16Params params);

// The W4A16 JIT kernel with explicit parameters (the tuning sweep and the
// tests use this; MakeW4a16JitKernel in runtime/jit_kernels.h uses the
// defaults, a matching tuning entry, and the test override below).
// Returns nullptr and sets *why_not when the layer or the parameters
// cannot run on `isa`; an error only for a JIT failure.
absl::StatusOr<std::unique_ptr<LinearKernel>> MakeW4a16JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier isa, const W4a16Params& params, std::string* why_not);

// Test hook: while it lives, layers created through the public API get
// their W4A16 parameters edited after defaults and tuning.
using ScopedW4a16ParamsOverride = ScopedParamsOverride<W4a16Params>;

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_W4A16_PARAMS_H_
