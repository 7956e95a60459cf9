// The W4A16 AMX panel decoder (family kW4a16AmxDecode): turns k pairs of
// one packed column block of the f32-FMA layout (jit/w4a16_layout.h: per k
// pair NB bytes, column j's k 2p in the low nibble and 2p + 1 in the high
// one) into the bf16 panel the tile kernel's B tiles read
// (jit/w4a16_amx_plan.h): per k pair and column pair one row of 32 dwords,
// column j's dword holding bf16(w[2p]) low and bf16(w[2p + 1]) high, where
// w is the weight's integer, exact in bf16:
//   u4 (integer zero points): u - z, in [-15, 15];
//   s4 and float zero points (s4 packing): q = u - 8, in [-8, 7].
// The scales (and float zero points) stay out: the tile kernel applies
// them per group to its f32 sums, as the int4 kernels do.
// `scaled` (Numerics::kZentorch): the dequantized weight instead, w =
// (u - z) * s (float zero points: (u - 8) * s + zf) in f32 rounded to bf16,
// bit for bit the f32 panel dequantizer's weights: the tile kernel then
// sums whole segments of K with no scale in between.
//
// The panel is column-pair-major within each tile group (the tile
// kernel's K between group ends, tile_group_pairs k pairs): per tile group,
// for each column pair, its tile_group_pairs rows of 128 bytes. So a B
// tile (16 rows of one half) is read in order from L2, and the panel's
// rows do not share the L1 sets of the tile kernel's f32 scratch, as rows
// NB * 4 bytes apart did (docs/amx.md: that layout cost 1.4x).
//
// Per 16 columns of a k pair: one widening load (a byte per dword), a
// shift and a ternary logic op that put the low nibble in the low word and
// the high nibble in the high word, an add (u4: 15 - z per column, so the
// index is u - z + 15; s4: 16 on the high word, whose nibble is q in two's
// complement and reads the table's second half), one vpermw through a
// table of bf16 values and one store; per k pair's row, a prefetch of the
// weights `prefetch` bytes ahead. Once per (thread, column block, K block)
// on the tiles' path, shared by every row tile of the task.
#ifndef W4JIT_JIT_W4A16_AMX_DECODE_GENERATOR_H_
#define W4JIT_JIT_W4A16_AMX_DECODE_GENERATOR_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/kernel_key.h"
#include "jit/emit_util.h"
#include "jit/generator.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct W4a16AmxDecodeArgs {
  const uint8_t* w;     // the block's packed weights at the first k pair
  const uint8_t* meta;  // the block's meta at the first group (u4: z)
  uint32_t* panel;      // group_pairs * groups rows of NB dwords
  int64_t groups;       // >= 1
};
using W4a16AmxDecodeFn = void (*)(const W4a16AmxDecodeArgs*);

struct W4a16AmxDecodeConfig {
  // Integer zero points: the meta holds NB f32 scales, then NB int32 z
  // (jit/w4a16_layout.h). Else the nibbles are s4-packed.
  bool u4 = false;
  int nr = 0;               // NB: a multiple of 16, up to 256
  int64_t group_pairs = 0;  // k pairs per group (>= 1)
  // k pairs per tile group, the panel's column-pair-major block: a
  // multiple of group_pairs (zentorch numerics' segments span groups).
  int64_t tile_group_pairs = 0;
  // Every group reads group 0's meta (a segment of a per-channel K).
  bool per_channel = false;
  // The dequantized weights rounded to bf16 (above): up to 8 vectors.
  bool scaled = false;
  bool float_zero = false;         // scaled: + zf
  DType meta_dtype = DType::kF32;  // scaled: the scales' and zf's
  // Software prefetch of the packed weights, bytes ahead of each k pair's
  // row (0: none; W4a16Params::prefetch_distance). Without it the tiles at
  // M = 4-16 from DRAM ran 1.4-1.5x slower on an Intel Xeon, the decode
  // waiting on each line (docs/performance/2026-12-07-xeon-amx-prefetch.md).
  int prefetch = 0;

  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.u4, c.nr, c.group_pairs, c.tile_group_pairs,
                    c.per_channel, c.scaled, c.float_zero, c.meta_dtype,
                    c.prefetch);
  }
  // s4 reads no meta unless scaled: per_channel is false; float_zero and
  // meta_dtype count only when scaled.
  W4a16AmxDecodeConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const W4a16AmxDecodeConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const W4a16AmxDecodeConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const W4a16AmxDecodeConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<W4a16AmxDecodeConfig>());

absl::Status CheckW4a16AmxDecodeConfig(const W4a16AmxDecodeConfig& config);

class W4a16AmxDecodeGenerator final : public Generator {
 public:
  explicit W4a16AmxDecodeGenerator(const W4a16AmxDecodeConfig& config);

 protected:
  void Generate() override;

 private:
  // The pair loops of the two modes.
  void EmitIntegerPairs();
  void EmitScaledPairs();
  // Of column vector c's 16 dwords from the k pair's row of its pair.
  int64_t PanelOffset(int c) const;

  W4a16AmxDecodeConfig config_;
  ConstPool pool_;
  int nv_;  // vectors of 16 columns per block
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_AMX_DECODE_GENERATOR_H_
