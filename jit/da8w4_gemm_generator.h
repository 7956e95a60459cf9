// The DA8W4 microkernel, JIT-emitted per shape: an mr x (nblk * NB) tile of
// y from mr quantized activation rows and nblk column blocks of packed
// 4-bit weights (jit/da8w4_layout.h), over all of K. mr = 1 with several
// blocks is the GEMV of decode; mr = MR with one or two blocks the GEMM.
//
// Arithmetic, identical for every tile shape and both ISAs (so any split of
// the work, and either ISA, gives bit-identical outputs):
//   per group g, exactly in int32:  acc = sum_k qa[m,k] * u[n,k]
//                                         - z[g,n] * sum_k qa[m,k]
//   tile[m,n] = fma(float(acc), s[g,n], tile[m,n])   (g in order, from 0)
//   y[m,n]    = tile[m,n] * sa[m] (+ bias[n])         (bf16: nearest even)
// With per-group activation scales (act_per_group) sa[m,g] enters at the
// group end instead:
//   tile[m,n] = fma(float(acc) * sa[m,g], s[g,n], tile[m,n])
//   y[m,n]    = tile[m,n] (+ bias[n])
// The unsigned nibbles u are the unsigned operand and qa the signed one.
//   AVX-512 VNNI: vpdpbusd acc, u, {1to16}[qa + 4q] into int32 registers.
// The nibbles are either unpacked in the loop from the packed layout (one
// load and three ALU ops per quad and block, shared by the tile's rows) or
// read as bytes from a panel decoded beforehand (`decoded`: two loads).
//   AVX2 (no VNNI on Zen 3): vpmaddubsw pairs u*qa into int16 (exact:
//   2 * 15 * 127 = 3810) and adds up to 8 quads in int16 (8 * 3810 < 32767)
//   before one vpmaddwd with ones widens them to int32. That is 2 vector ops
//   per 32 MACs instead of 3; measured ~1.4x faster on Zen 3.
// The zero-point term needs the per-row group sums of qa from the
// quantizer: for s4 (z = 8) it is the broadcast sum shifted left by 3, for
// u4 a vpmulld with the packed zero points.
#ifndef W4JIT_JIT_DA8W4_GEMM_GENERATOR_H_
#define W4JIT_JIT_DA8W4_GEMM_GENERATOR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/kernel_key.h"
#include "jit/da8w4_gemm_plan.h"
#include "jit/da8w4_layout.h"
#include "jit/emit_util.h"
#include "jit/epilogue_emit.h"
#include "jit/generator.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// What one call computes: `steps` times, a tile of rows [0, mr) and the
// next nblk column blocks; then every pointer but the activation ones moves
// on by nblk blocks. Activations use the quantizer's layout
// (QaRowStride / SumsRowStride, jit/da8w4_layout.h), which the kernel
// bakes in.
struct Da8w4GemmArgs {
  const int8_t* qa;       // row 0 of the tile
  const int32_t* sums;    // row 0 of the tile
  const float* sa;        // row 0 of the tile (SaRowStride apart)
  const uint8_t* w;       // first block
  const uint8_t* scales;  // first block (layout.scale_dtype)
  const int32_t* zeros;   // first block (u4 only)
  const float* bias;      // first column of the first block (bias only)
  void* y;                // y[row 0, first output column of the first block]
  int64_t ldy_bytes;
  int64_t steps;  // >= 1
  // Binary post-op operands (epilogue): [row 0, first output column of the
  // first block], and their row strides in bytes.
  const void* ep[2];
  int64_t ep_ld_bytes[2];
};
using Da8w4GemmFn = void (*)(const Da8w4GemmArgs*);

struct Da8w4GemmConfig {
  IsaTier isa = IsaTier::kAvx2;    // IsaFeature::kAvx512Vnni: zmm, vpdpbusd
  DType act_dtype = DType::kBF16;  // only named; the code does not depend on it
  DType out_dtype = DType::kF32;
  WeightType weight_type = WeightType::kS4;
  Da8w4Layout layout;  // lanes must match the ISA (8 / 16)
  bool bias = false;
  int mr = 1;    // rows of the register tile
  int nblk = 1;  // column blocks of the register tile
  // The last block of every step holds only layout.last_block_cols()
  // columns: stores stop there (used for the final call of a row).
  bool n_tail = false;
  // Quads per unrolled chunk; on AVX2 also the int16 flush period (<= 8).
  int chunk_quads = 8;
  // The weights come already decoded (decoded_block_bytes per block,
  // jit/da8w4_layout.h: per quad the low-nibble vector, then the
  // high-nibble one): the inner loop is two loads and the dot products,
  // no unpacking. The decode is paid once per panel, not per row tile.
  bool decoded = false;
  // Fused epilogue. With silu_mul the layout holds the interleaved
  // [gate | up] columns (runtime/gate_up_interleave.h, unit = lanes): half
  // 0 of a block is gate, half 1 up, and a block has `lanes` output
  // columns; out_n is the layer's N / 2 (the tail of the last block).
  Epilogue epilogue;
  int64_t out_n = 0;
  // One activation scale per (row, group) (ActQuant::kPerGroup).
  bool act_per_group = false;
  // Software prefetch of each block's stream, bytes ahead (0: none). Not
  // with `decoded` (the panel is in L2).
  int prefetch = 0;
  // AMX tiles instead of vector dot products (jit/da8w4_amx_generator.h):
  // decoded panels, nblk = 1, mr up to 32; the vector code (group ends,
  // epilogue) stays the AVX-512 one.
  bool amx = false;

  // The kernel-cache key is the config (dispatch/config_key.h): every
  // field, with those that do not change the code here made canonical.
  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.isa, c.act_dtype, c.out_dtype, c.weight_type, c.layout,
                    c.bias, c.mr, c.nblk, c.n_tail, c.chunk_quads, c.decoded,
                    c.epilogue, c.out_n, c.act_per_group, c.prefetch, c.amx);
  }
  // The tier whose code runs (AVX512_BF16 runs the VNNI code); out_n is 0
  // without silu_mul, prefetch 0 with decoded weights.
  Da8w4GemmConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const Da8w4GemmConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const Da8w4GemmConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const Da8w4GemmConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<Da8w4GemmConfig>());

// Why this config cannot be generated (register budget from its plan,
// jit/da8w4_gemm_plan.h; displacement range, lanes vs ISA), or OK.
absl::Status CheckDa8w4GemmConfig(const Da8w4GemmConfig& config);

class Da8w4GemmGenerator : public Generator {
 public:
  explicit Da8w4GemmGenerator(const Da8w4GemmConfig& config);

 protected:
  // For a derived generator with its own plan (the AMX one).
  Da8w4GemmGenerator(const Da8w4GemmConfig& config, const Da8w4GemmPlan& plan);
  void Generate() override;

  // General-purpose register roles: the arguments and the entry rsp, the
  // cursors that move along K, then the loop counters (one role each for
  // the whole kernel); the epilogue's registers (the K cursors are free by
  // then).
  static constexpr Xbyak::Reg64 kArgs{Xbyak::Operand::RDI};  // Da8w4GemmArgs
  static constexpr Xbyak::Reg64 kSavedRsp{Xbyak::Operand::RBP};
  static constexpr Xbyak::Reg64 kQa{Xbyak::Operand::R8};  // activations
  static constexpr Xbyak::Reg64 kW{Xbyak::Operand::R9};   // packed weights
  static constexpr Xbyak::Reg64 kScales{Xbyak::Operand::R10};
  static constexpr Xbyak::Reg64 kZeros{Xbyak::Operand::R11};  // u4
  static constexpr Xbyak::Reg64 kSums{Xbyak::Operand::R12};   // qa sums
  // Per-group activation scales: sa[row 0, g] along K.
  static constexpr Xbyak::Reg64 kSaCursor{Xbyak::Operand::RSI};
  static constexpr Xbyak::Reg64 kGroupsLeft{Xbyak::Operand::R13};
  static constexpr Xbyak::Reg64 kChunksLeft{Xbyak::Operand::R14};
  static constexpr Xbyak::Reg64 kStepsLeft{Xbyak::Operand::R15};
  // Outside the K loop (the frame set-up, the step end): a scratch.
  static constexpr Xbyak::Reg64 kScratch{Xbyak::Operand::RAX};
  // The epilogue: the binary operands' rows (kQa and kW are free by then);
  // the rows' per-token sa, the y row and its stride; the bias of the
  // step's first block. The bias shares rsi with kSaCursor: the epilogue
  // runs after the last group end, where the sa cursor is dead, and every
  // other register has a role there already.
  static constexpr Xbyak::Reg64 kEpOperand0{Xbyak::Operand::R8};
  static constexpr Xbyak::Reg64 kEpOperand1{Xbyak::Operand::R9};
  static constexpr Xbyak::Reg64 kEpSa{Xbyak::Operand::RAX};
  static constexpr Xbyak::Reg64 kEpY{Xbyak::Operand::RCX};
  static constexpr Xbyak::Reg64 kEpLdy{Xbyak::Operand::RDX};
  static constexpr Xbyak::Reg64 kEpBias{Xbyak::Operand::RSI};
  static constexpr Xbyak::Reg32 kEpStoreTmp32{Xbyak::Operand::EBX};

  // The frame's 8-byte slots after the two stack tiles: the per-step
  // pointers, which move on by nblk blocks each step (the args keep the
  // first step's). The frame reserves kFrameSlots, three more than used
  // (a few bytes of stack; changing it would change every kernel's code).
  enum Slot : int {
    kWSlot = 0,
    kScalesSlot = 1,
    kZerosSlot = 2,
    kBiasSlot = 3,
    kYSlot = 4,
    kEpOperandSlot = 5,  // + i: binary operand i
    kFrameSlots = 10,
  };

  // s4 weights arrive as signed q = u - 8 (the AMX tiles' panels): the
  // group end subtracts no zero-point term.
  bool zero_point_in_weights_ = false;

  enum class Flush { kStore, kAdd, kFinal, kOnly };
  int NumAcc() const { return plan_.nacc; }
  int AccIndex(int row, int blk, int half) const {
    return plan_.Acc(row, blk, half);
  }
  // Stack tiles (rsp-relative offsets).
  int I32Tile(int acc) const { return acc * vec_.bytes(); }
  int F32Tile(int acc) const { return (NumAcc() + acc) * vec_.bytes(); }
  int Local(int slot) const { return 2 * NumAcc() * vec_.bytes() + 8 * slot; }
  // Bytes the weight cursor moves per quad and per block.
  int64_t QuadStride() const;
  int64_t BlockStride() const;

  // The entry: frame, locals (the args' per-step pointers), `enter`,
  // then `step` per step, then `leave` before the frame goes.
  void EmitKernel(const std::function<void()>& enter,
                  const std::function<void()>& step,
                  const std::function<void()>& leave);
  // Loads the K cursors and zeroes the f32 tile (and the accumulators).
  void EmitStepStart();
  // `group` once per group, the cursors moved on between groups.
  void EmitGroups(const std::function<void()>& group);
  // Moves the per-step pointers on by nblk blocks.
  void EmitStepEnd();
  void EmitStep();
  // One group's dot products and group end, by the ISA's steps.
  void EmitGroup();
  // `body` `count` times (a loop on kChunksLeft when more than once).
  void EmitChunkLoop(int64_t count, const std::function<void()>& body);
  // `quads` quads of every block of the tile; the K cursors move on.
  void EmitChunk(int quads);

  // The ISAs' steps, each in its own file; the driver calls them per
  // group and per quad.
  // AVX2 (jit/da8w4_gemm_avx2_steps.cc): int16 partial sums of a chunk
  // (vpmaddubsw), flushed into int32 (vpmaddwd) on the stack; the last
  // flush of a group ends it.
  void EmitAvx2Group();
  void EmitAvx2Quad(int q, bool first_in_chunk);
  void EmitFlush(Flush mode);
  // AVX-512 VNNI (jit/da8w4_gemm_vnni_steps.cc): int32 accumulators in
  // registers for the whole group (vpdpbusd), from nibbles unpacked in the
  // loop or from a decoded panel; the group end from the registers.
  void EmitVnniGroup();
  void EmitVnniQuad(int q);
  void EmitQuadDecodedVnni(int q);
  void EmitGroupEndVnni();
  // acc (int32, one group) -> tile += float(acc - z * sum) * s; per
  // group the float is first multiplied by sa[row, g] from `row_sa` (a
  // register on AVX2, an embedded broadcast on AVX-512).
  // `scale` (when given) already holds the widened scales of (blk, half)
  // for this group, and `zeros` (u4, when given) their zero points: the
  // AMX kernel loads them once for all rows.
  void EmitGroupEndOne(int row, int blk, int half, const Xbyak::Xmm& acc,
                       const Xbyak::Xmm& row_sum, const Xbyak::Xmm& tmp,
                       const Xbyak::Operand& row_sa,
                       const Xbyak::Xmm* scale = nullptr,
                       const Xbyak::Xmm* zeros = nullptr);
  void LoadRowSum(int row, const Xbyak::Xmm& dst);
  void EmitEpilogue();
  // Output columns of one block, and of block `blk` of a step.
  int OutBlockCols() const;
  int OutCols(int blk) const;

  const Da8w4GemmConfig cfg_;
  const Da8w4GemmPlan plan_;
  VecEmitter vec_;
  ConstPool pool_;
  const int64_t qa_stride_;
  const int64_t sums_stride_;
  const int out_bytes_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_GEMM_GENERATOR_H_
