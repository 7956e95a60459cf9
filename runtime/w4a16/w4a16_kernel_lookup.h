// The W4A16 JIT kernels as the runtime gets them. A layer's plan and
// packed layout turn into configs (jit/w4a16_*_generator.h); each config is
// checked first (a config that cannot be generated is a reason to fall
// back, never a cache entry), then the process-wide cache
// (runtime/kernel_cache.h) returns the kernel, running the generator on
// the first request. The generators in jit/ know nothing of the cache.
#ifndef W4JIT_RUNTIME_W4A16_W4A16_KERNEL_LOOKUP_H_
#define W4JIT_RUNTIME_W4A16_W4A16_KERNEL_LOOKUP_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/generator.h"
#include "jit/w4a16_amx_decode_generator.h"
#include "jit/w4a16_amx_generator.h"
#include "jit/w4a16_dequant_generator.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_layout.h"
#include "jit/w4a16_panel_generator.h"
#include "runtime/w4a16/w4a16_params.h"
#include "runtime/w4a16/w4a16_regime.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// What a W4A16 layer runs with, resolved from the parameters and the layer.
struct W4a16Plan {
  W4a16Params p;
  Flavor flavor = Flavor::kF32Fma;
  IsaTier key_isa = IsaTier::kAvx2;  // the least tier the code needs
  int lanes = 8;
  int64_t group = 0;  // resolved group size
  // f32 panel path: K block and the run of k sharing one scale.
  int64_t kc = 0;
  int64_t segment = 0;
  // Numerics::kZentorch: every M runs the panel path, whose dequantizer
  // rounds the weights to bf16 (the int4 kernels apply the scale per group
  // and so never hold a dequantized weight to round); no int4 kernels.
  bool panels_only = false;
  // From p.amx_min_m rows on: the AMX tiles (jit/w4a16_amx_generator.h)
  // over panels decoded amx_kc k at a time (whole groups; per channel a
  // divisor of K, the tiles' "group" then: amx_group).
  bool amx = false;
  int64_t amx_kc = 0;
  // The K block of row blocks of one or two row tiles (W4a16Params).
  int64_t amx_kc_small = 0;
  int64_t amx_group = 0;
  // Numerics::kZentorch on the tiles: the panel holds the dequantized
  // weights rounded to bf16, and amx_group is a segment of K (a multiple
  // of the group) whose sums need no scale.
  bool amx_scaled = false;
  // Which path runs at which M (MakeW4a16Regime): the lookup builds the
  // kernels of the paths it names, Run picks by M.
  W4a16Regime regime{W4a16Path::kInt4Small};
};

// The int4 kernel configs of a layer from `base` (the layer's fields): the
// small tile (gemv_mr rows, the block's width), then the tall tile where
// some M runs it under `flavor` (always for the bf16 dot; for the FMA
// flavour below the panels' gemm_min_m) and it differs. The lookup and
// CheckW4a16Params both build the tiles here.
std::vector<W4a16GemvConfig> W4a16Int4Configs(const W4a16Params& p,
                                              Flavor flavor,
                                              const W4a16GemvConfig& base);

// Each kernel checked, then found in or added to the cache. The caller
// holds a kernel for as long as it may run it (the cache may evict its own
// reference).
absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16GemvKernel(
    const W4a16GemvConfig& config);
absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16DequantKernel(
    const W4a16DequantConfig& config);
absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16PanelKernel(
    const W4a16PanelConfig& config);
absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16AmxKernel(
    const W4a16AmxConfig& config);
absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16AmxDecodeKernel(
    const W4a16AmxDecodeConfig& config);

// k per group of the AMX panel decoder: the layer's group (its meta), or
// per channel the tiles' segment.
int64_t W4a16AmxDecodeGroup(const W4a16Plan& plan, const W4a16Layout& layout);
// The AMX configs of a layer with plan.amx: the decoder, and the tile
// kernel of `row_blocks` blocks of `rows` rows for full blocks (tail
// false) or the last block.
W4a16AmxDecodeConfig W4a16AmxDecodeConfigOf(const W4a16Plan& plan,
                                            const W4a16Layout& layout);
W4a16AmxConfig W4a16AmxConfigOf(const LayerDesc& desc, const W4a16Plan& plan,
                                const W4a16Layout& layout, int rows, bool tail,
                                int row_blocks = 1);
// Whether the last block needs a tile kernel of its own.
bool W4a16AmxHasTail(const LayerDesc& desc, const W4a16Layout& layout);

// Every kernel a W4A16 layer may run.
struct W4a16Kernels {
  W4a16GemvGenerator::Fn int4_small = nullptr;
  W4a16GemvGenerator::Fn int4_tall = nullptr;  // int4_small if the same
  // f32-FMA flavour only: the dequantize + panel path.
  W4a16DequantGenerator::Fn dequant = nullptr;
  W4a16PanelGenerator::Fn panel_full = nullptr;
  W4a16PanelGenerator::Fn panel_tail = nullptr;  // panel_full if the same
  // plan.amx only: the panel decoder and the tile kernels by row blocks
  // and height (amx_tiles[blocks - 1][rows]: one block of rows from the
  // least a call can need to 32, two blocks of 17 to 32, the heights of
  // two or more row tiles), for full column blocks and the last (amx_tail,
  // the same where N fills it).
  W4a16AmxDecodeFn amx_decode = nullptr;
  std::array<std::vector<W4a16AmxGenerator::Fn>, 2> amx_tiles;
  std::array<std::vector<W4a16AmxGenerator::Fn>, 2> amx_tail;
  std::vector<std::string> names;  // in the order above
  // The generators of the entry points above: the layer holds its kernels
  // (the cache may drop its reference at any time).
  std::vector<std::shared_ptr<const Generator>> held;
};

// Builds (or finds in the cache) the kernels of a layer packed as `layout`
// under `plan`. Where the generators cannot take the plan, sets *why_not
// and returns OK (the layer falls back to the reference); a generation
// that fails is the error.
absl::Status GetW4a16Kernels(const LayerDesc& desc, const W4a16Plan& plan,
                             const W4a16Layout& layout, W4a16Kernels* kernels,
                             std::string* why_not);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_W4A16_W4A16_KERNEL_LOOKUP_H_
