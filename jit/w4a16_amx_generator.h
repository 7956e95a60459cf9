// The W4A16 AMX tile kernel (family kW4a16Amx): up to 32 rows (or two
// blocks of as many rows) x one packed column block of y, over one K block,
// from bf16 rows of x and the block's decoded bf16 panel
// (jit/w4a16_amx_decode_generator.h), in tdpbf16ps tiles (jit/w4a16_amx_plan.h)
// one column pair (32 columns) at a time.
//
// Arithmetic (numerics.md, W4A16): per group g, in the tiles' f32,
//   C[m, n]   = sum_{k in g} x[m, k] * w[n, k]   (w = u - z, or u - 8)
//   acc[m, n] = fma(C[m, n], s[g, n], acc[m, n])  (+ zf[g, n] * sum_g x[m])
// then, after the last K block, y = acc (+ bias), the epilogue, the store.
//
// Memory layouts (each chosen so that a tile's rows are contiguous lines
// and the three streams do not share L1 sets; rows K * 2 bytes apart made
// every row of x alias one set, docs/amx.md):
//   x    per K step of 32: the tile's 32 rows of 32 bf16 (2 KiB; row tile
//        1 at + 1 KiB), packed by the runtime (PackRowsAmxSteps);
//   B    the decoder's panel, column-pair-major within a group;
//   acc  per column pair: 32 rows of 32 f32 (4 KiB); a second row block's
//        after the first's NB / 32 pairs.
// The weights' integers are exact in bf16 and so are bf16 x, so every
// product is exact; the sums are f32 (the tiles flush denormals, within
// the tolerance's absolute term). The order of the f32 additions differs
// from the vector kernels', which numerics.md allows: results agree with
// them within the tolerance, not bit for bit.
//
// The per-group scales (the crux): a tile dot product sums the whole K of
// its A tile, so no K step crosses a group; at each group end the four C
// tiles go to the stack (tilestored) and the vector code scales them into
// acc, an f32 scratch tile in memory (32 x 32 f32 per column pair).
// That vector code for one column pair runs, in parts, behind the K steps
// of the next (software pipelining: the out-of-order core overlaps them),
// and the next pair's first step stores each C tile just before its first
// product, since tile registers are not renamed: four tilestored then four
// tilezero made every tile wait for the last product to end (measured on
// a Xeon: 31 TSC per tdpbf16ps that way, 26.5 this way, 14.3 the peak);
// the pairs of a group run in turn, so its A rows stay in L1. With two
// row blocks each pair's unit runs for one block, then for the other, so
// the pair's B tiles come from L2 once and from L1 the second time (a
// call of one row block reads three of its four tile loads from L2). Per
// channel the "group" is a segment of K with the same scale, so the scale
// is applied per segment (a rounding per segment, no more).
#ifndef W4JIT_JIT_W4A16_AMX_GENERATOR_H_
#define W4JIT_JIT_W4A16_AMX_GENERATOR_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/kernel_key.h"
#include "jit/emit_util.h"
#include "jit/generator.h"
#include "jit/w4a16_amx_plan.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

struct W4a16AmxArgs {
  // Bits of `flags`.
  static constexpr int64_t kLoadAcc = 1;  // acc holds earlier K blocks
  static constexpr int64_t kFinal = 2;    // the last K block: write y
  // The calling thread's tiles already hold this kernel's configuration
  // (an earlier call of the same height left them so): no ldtilecfg.
  static constexpr int64_t kTilesConfigured = 4;
  // Leave the tiles configured for the caller's next call; without it the
  // kernel releases them (tilerelease). The caller's last call goes
  // without the flag, so every pool thread leaves with none held. ldtilecfg and
  // tilerelease cost about 300 TSC and drain the tile unit, a tenth of a call
  // of 32 products.
  static constexpr int64_t kKeepTiles = 8;
  // The tile's packed x (above) at the K block's first step.
  const uint16_t* x;
  // Float zero points: per group, the 32 rows' f32 sums of their x over
  // the group, at the K block's first group (else unused).
  const float* x_sums;
  // Two row blocks: the second block's x and x sums at these byte
  // offsets from the first's (its acc follows the first's, its y and
  // binary operands follow the first's mr rows).
  int64_t x_block_bytes;
  int64_t x_sums_block_bytes;
  const uint32_t* panel;  // the decoded K block, at the block's column 0
  const uint8_t* meta;    // the block's meta at the K block's first group
  int64_t groups;         // groups (per channel: segments) in the K block
  float* acc;  // scratch: per row block, NB / 32 column pairs of 4 KiB
  void* y;     // y at (tile row 0, block's first output column)
  int64_t ldy_bytes;
  const float* bias;  // padded bias at the block's first column, or null
  int64_t flags;
  // Binary post-op operands at (tile row 0, block's first output column),
  // and their row strides in bytes.
  const void* ep[2];
  int64_t ep_ld_bytes[2];
};

struct W4a16AmxConfig {
  DType out_dtype = DType::kF32;
  bool bias = false;
  int mr = 1;  // rows, 1..32
  // Row blocks of mr rows per call, 1 or 2 (each of the second's units
  // right after the first's: the pair's B tiles then come from L1).
  int row_blocks = 1;
  int nr = 0;     // NB, a multiple of 32 up to 256
  int64_t n = 0;  // columns of the block that exist in y (<= nr)
  // With silu_mul vector pairs (2i, 2i + 1) are (gate, up) columns and
  // out_n is the block's output columns (nr / 2, or fewer).
  Epilogue epilogue;
  int64_t out_n = 0;
  // Integer zero points: the meta holds z and 16 z after the scales
  // (jit/w4a16_layout.h; the decoder subtracts z), which the kernel steps
  // over.
  bool u4 = false;
  // Float zero points: zf after the scales in the meta, and the rows'
  // group sums after each group of x.
  bool float_zero = false;
  DType meta_dtype = DType::kF32;  // of the scales and zf
  int64_t group_size = 0;          // k per group (per channel: segment)
  // Every group reads group 0's meta (segments of a per-channel K).
  bool per_channel = false;
  // Numerics::kZentorch: the panel holds the dequantized weights rounded
  // to bf16 (W4a16AmxDecodeConfig::scaled), so a "group" is a segment of
  // K whose sums enter acc unscaled; no meta, no x sums.
  bool scaled = false;

  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.out_dtype, c.bias, c.mr, c.row_blocks, c.nr, c.n,
                    c.epilogue, c.out_n, c.u4, c.float_zero, c.meta_dtype,
                    c.group_size, c.per_channel, c.scaled);
  }
  // Meta bytes between groups (0 per channel).
  int64_t MetaStride() const;
  // out_n is 0 without silu_mul; scaled reads no meta (u4, float_zero,
  // meta_dtype and per_channel are the defaults').
  W4a16AmxConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const W4a16AmxConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const W4a16AmxConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const W4a16AmxConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<W4a16AmxConfig>());

absl::Status CheckW4a16AmxConfig(const W4a16AmxConfig& config);

class W4a16AmxGenerator final : public Generator {
 public:
  using Fn = void (*)(const W4a16AmxArgs*);
  explicit W4a16AmxGenerator(const W4a16AmxConfig& config);

 protected:
  void Generate() override;

 private:
  // A unit: column pair vp (vectors 2 vp, 2 vp + 1 of the block) of row
  // block rb, in a group.
  struct Unit {
    int vp;
    int rb;
  };
  // The unit before the one being emitted and its group (0 or -1 away
  // from the cursors; -1: the previous group's, which the first group has
  // none of).
  struct PrevUnit {
    Unit unit;
    int group;
  };
  // Unit u of the group at the cursors, draining `prev`'s C tiles on the
  // way.
  void EmitUnit(const Unit& u, const PrevUnit& prev);
  void EmitStep(int vp, int64_t s, const Xbyak::Reg64& x, const Xbyak::Reg64& b,
                bool drain);
  void EmitStoreTiles();
  // acc += C * s (+ zf * sum) for rows [r0, r1) of unit u of the group
  // `group` (0 or -1) away from the cursors.
  void EmitGroupEnd(const Unit& u, int group, int r0, int r1);
  void EmitFinalStores(int vp);
  bool PairHasOutput(int vp) const;
  // Of row r, half h of column pair vp of row block rb in acc (and,
  // without vp and rb, in the stack rows tilestored writes).
  int64_t AccOffset(int vp, int rb, int r, int h) const {
    return int64_t{rb} * config_.nr * W4a16AmxPlan::kStackRowBytes +
           int64_t{vp} * 4096 + StackOffset(r, h);
  }
  static int64_t StackOffset(int r, int h) {
    return int64_t{r} * W4a16AmxPlan::kStackRowBytes + h * 64;
  }

  W4a16AmxConfig config_;
  W4a16AmxPlan plan_;
  VecEmitter vec_;
  ConstPool pool_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_AMX_GENERATOR_H_
