// W4A16 kernel that computes straight from the packed int4 weights
// (family kW4a16Gemm): for each column block, for each group of rows, it
// streams the block's nibbles once, turns them into integer values,
// multiplies them with x inside a group (f32 FMA, or bf16 pairs with
// vdpbf16ps) and applies the group scale once per group:
//   acc += s[g] * sum_{k in g} (u - z) * x[k].
// The dot flavour multiplies (u - 8) itself; the f32 flavour multiplies the
// low nibble and the whole byte of each k pair with recombined x and
// starts each group's sum from the zero point's share
// (jit/w4a16_layout.h, F32Int4RowSlots).
// The right kernel for small M, where every weight is decoded once per call
// and the weight stream is the cost; with a large row tile (zmm) it is also
// the bf16 flavour's kernel for large M.
//
// One driver and a file of steps per flavour: jit/w4a16_gemv_generator.cc
// holds the block, row-tile, group and step loops, the prefetch, the group
// end (scales, zero points), the stores and the epilogue;
// jit/w4a16_gemv_f32_steps.cc and jit/w4a16_gemv_dot_steps.cc each emit
// one flavour's tile constants, group start and steps; both place their
// registers by the plan of jit/w4a16_gemv_plan.h.
//
// Built from a W4a16GemvConfig (below), checked by CheckW4a16GemvConfig;
// the config is its kernel-cache key, and its name() the kernel's name
// (family "w4a16"; "_f<n>": a tile of n vectors).
//
// A tile of fewer vectors than the block has room for more rows: it
// decodes each weight into registers once and multiplies it with every row
// of the tile, so a tall narrow tile (e.g. 8 rows x 1 ymm on AVX2) pays the
// decode once per 8 rows instead of once per 2 (batched decode, M = 8..64).
// The block's column vectors are then covered by several such tiles in
// turn. Every tile of a kernel adds the same products in the same order
// (one chain per accumulator, or a k-even and a k-odd chain for the whole
// kernel), so a row's result does not depend on the tile it falls in.
#ifndef W4JIT_JIT_W4A16_GEMV_GENERATOR_H_
#define W4JIT_JIT_W4A16_GEMV_GENERATOR_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/kernel_key.h"
#include "jit/emit_util.h"
#include "jit/epilogue_emit.h"
#include "jit/generator.h"
#include "jit/w4a16_layout.h"

namespace w4jit::internal {

struct W4a16GemvArgs {
  const uint8_t* w;     // packed weights of block `block_begin`
  const uint8_t* meta;  // scales (+ zero points) of block `block_begin`
  const float* bias;    // padded bias of block 0, or null
  const void* x;        // packed rows (PackRowsF32 / PackRowsBf16Pairs)
  void* y;              // y[0][first output column of block_begin]
  int64_t ldy_bytes;
  int64_t m;  // rows, >= 1
  int64_t block_begin;
  int64_t block_end;  // exclusive
  // Binary post-op operands (config.epilogue) at [0][first output column of
  // block_begin], and their row strides in bytes.
  const void* ep[2];
  int64_t ep_ld_bytes[2];
};

// What one int4 kernel is specialised for.
struct W4a16GemvConfig {
  // kAvx2 (ymm) or kAvx512Vnni / kAvx512Bf16 (zmm; the bf16 flavour needs
  // kAvx512Bf16).
  IsaTier isa = IsaTier::kAvx2;
  // kF32Fma: x as f32 rows; kBf16Dot: x as bf16 pairs (the packed-row
  // formats of runtime/w4a16/w4a16_pack.h).
  Flavor flavor = Flavor::kF32Fma;
  DType out_dtype = DType::kF32;
  WeightType weight_type = WeightType::kS4;  // u4 reads zero points
  // Float zero points: s4 decode, and per group acc += zf * sum_{k in g} x,
  // the sums read from the packed rows after each group.
  bool float_zero = false;
  // bf16-dot with float_zero: the meta holds 8 - z of folded u4 zero points
  // (jit/w4a16_layout.h) and the kernel forms zf at the group end.
  bool folded_zero = false;
  DType meta_dtype = DType::kF32;  // f32, or bf16 / f16 (compact meta)
  int64_t group_size = 0;          // resolved (K for per-channel)
  bool per_channel = false;
  // N and K: tails and loop counts are compiled in. With silu_mul n counts
  // the interleaved [gate | up] columns of runtime/gate_up_interleave.h
  // and out_n is the layer's N / 2.
  int64_t n = 0;
  int64_t k = 0;
  int mr = 1;  // rows per register tile
  int nr = 0;  // NB, the packed block width in columns
  // Vectors per register tile (dividing the block's), 0: the whole block.
  int tile_vectors = 0;
  bool bias = false;
  // Fused epilogue (jit/epilogue_emit.h). With silu_mul vector pairs
  // (2i, 2i + 1) of a block are (gate, up), so a tile holds an even number
  // of vectors.
  Epilogue epilogue;
  int64_t out_n = 0;  // silu_mul only
  int prefetch = 0;   // software prefetch distance in bytes (0: none)

  // The kernel-cache key is the config (dispatch/config_key.h): every
  // field, with those that do not change the code here made canonical.
  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.isa, c.flavor, c.out_dtype, c.weight_type, c.float_zero,
                    c.folded_zero, c.meta_dtype, c.group_size, c.per_channel,
                    c.n, c.k, c.mr, c.nr, c.tile_vectors, c.bias, c.epilogue,
                    c.out_n, c.prefetch);
  }
  // out_n is 0 without silu_mul.
  W4a16GemvConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const W4a16GemvConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const W4a16GemvConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const W4a16GemvConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<W4a16GemvConfig>());

// Checks that the config describes a kernel the generator can emit
// (register budget, group and K divisibility, flavour vs ISA). With the
// canonical form and the name in jit/w4a16_gemv_config.cc.
absl::Status CheckW4a16GemvConfig(const W4a16GemvConfig& config);

// k per step of the kernel's loop: a pair (one byte per column) for the
// f32 flavour, an octet (one dword per column, w4a16_layout.h) for the dot
// flavour. Groups are whole steps.
inline constexpr int W4a16GemvStepK(Flavor flavor) {
  return flavor == Flavor::kBf16Dot ? 8 : 2;
}

struct W4a16GemvPlan;

class W4a16GemvGenerator final : public Generator {
 public:
  using Fn = void (*)(const W4a16GemvArgs*);

  explicit W4a16GemvGenerator(const W4a16GemvConfig& config);

 protected:
  void Generate() override;

 private:
  void EmitRowLoop(bool tail);
  void EmitTile(int mr, bool tail);
  void EmitTileColumns(int mr, bool tail, int v0);
  // Steps [0, steps) of the tile's k loop at the cursors, by flavour.
  void EmitSteps(const W4a16GemvPlan& plan, int steps, int mr);
  // The prefetch of step s (the first column tile's steps issue it).
  void EmitStepPrefetch(const W4a16GemvPlan& plan, int s);
  // Zeroes the tile's accumulators (all chains, or all but the k-even).
  void ZeroAccumulators(const W4a16GemvPlan& plan, int mr, bool skip_k_even);

  // The flavours' steps, each in its own file: the driver calls them at
  // the tile start, the group start and the k loop.
  // f32 FMA (jit/w4a16_gemv_f32_steps.cc): the 0x0F mask register; the
  // group's first accumulator values, the zero point's share from the
  // packed rows' slots (F32Int4RowSlots); steps of one k pair.
  void EmitF32TileConstants(const W4a16GemvPlan& plan);
  void EmitF32GroupStart(const W4a16GemvPlan& plan, int mr);
  void EmitF32Steps(const W4a16GemvPlan& plan, int steps, int mr);
  // Decodes vector c of step s into its low nibbles (k even) and whole
  // bytes (k odd; jit/w4a16_layout.h).
  void EmitDecodeVector(int s, int c, const Xbyak::Xmm& lo,
                        const Xbyak::Xmm& byte, const Xbyak::Operand& mask_lo);
  // One step (k pair) of an AVX2 tile whose vectors are all decoded first.
  void EmitDecodedStep(const W4a16GemvPlan& plan, int s, int mr,
                       const Xbyak::Operand& mask_lo);
  // bf16 dot (jit/w4a16_gemv_dot_steps.cc): the vpermw table register;
  // zero accumulators; steps of one k octet.
  void EmitDotTileConstants(const W4a16GemvPlan& plan);
  void EmitDotGroupStart(const W4a16GemvPlan& plan, int mr);
  void EmitDotSteps(const W4a16GemvPlan& plan, int steps, int mr);
  // Step s (a k octet) of the tile's vector v: decode its four k pairs and
  // multiply each with the mr rows' x pair.
  void EmitDotVector(const W4a16GemvPlan& plan, int s, int v, int mr);

  void EmitGroupEnd(const W4a16GemvPlan& plan, int mr);
  void EmitStores(const W4a16GemvPlan& plan, int mr, bool tail);
  // The stores of a tile with a fused epilogue: the tile's values are
  // spilled to the stack first, so that the epilogue has every register.
  void EmitEpilogueStores(const W4a16GemvPlan& plan, int mr, bool tail);
  // Output columns of a block (NB, or NB / 2 with silu_mul).
  int64_t OutBlockCols() const;
  // Packed weight bytes of one step (all NB columns).
  int64_t StepWeightBytes() const;
  // Bytes of meta (scales, zero points) per group of one block.
  int64_t MetaGroupBytes() const;
  // dst = elements [i, i + lanes) of the current group's meta (rbx),
  // widened to f32.
  void LoadMeta(const Xbyak::Xmm& dst, int64_t i);
  // Per-group slots of the packed rows (each `mr` f32 after the group's
  // elements): F32Int4RowSlots for the f32 flavour, the float zero points'
  // sums for the dot flavour; and the place of the x sum among them.
  int RowSlots() const;
  int SumSlot() const;
  // The f32 flavour's slots (jit/w4a16_layout.h).
  F32Int4RowSlots F32Slots() const;

  W4a16GemvConfig config_;
  Epilogue epilogue_;
  VecEmitter vec_;
  ConstPool pool_;
  bool dot_;  // bf16-dot flavour
  int lanes_;
  int nv_;  // vectors per block
  int tv_;  // vectors per register tile (divides nv_)
  int64_t nb_;
  int64_t groups_;
  int steps_per_group_;  // k pairs (FMA) or k quads (dot) per group
  int out_size_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_GEMV_GENERATOR_H_
