// The DA8W4 activation quantizer, JIT-emitted per (ISA, activation dtype,
// K, group size). For each row of x it computes, exactly as
// docs/numerics.md and internal::QuantizeRowRef define:
//   sa    = max(amax, 1e-10) / 127            (f32; NaN for a row with NaN/Inf)
//   qa[k] = clamp(rne(x[k] / sa), -127, 127)  (int8; all 0 for such a row)
//   sums[g] = sum of qa over group g           (int32; all 0 for such a row)
// Pass 1 takes the maximum of the integer patterns bits & 0x7FFFFFFF, which
// is amax for a finite row and >= 0x7F800000 if the row holds NaN or Inf
// (over x's x_k columns where config.x_k is set).
// Pass 2 (over the row again, now L1-resident) divides (vdivps, a true
// division), rounds with vcvtps2dq under the default MXCSR (round half to
// even), clamps, packs to int8 and sums per group.
// Act-order (config.permuted): qa[j] quantizes x[k_perm[j]] instead, so
// that the groups of a GPTQ act-order layer are contiguous in qa as in the
// packed weights. Pass 1 is unchanged (a maximum does not care about
// order); pass 2 gathers x through the table (vpgatherdd). bf16 gathers
// the dword ending at x[k_perm[j]] and keeps its high half, so it never
// reads before x; the one lane with k_perm[j] = 0 is masked off and takes
// x[0] from a register instead.
// Per group (config.per_group): every group g of the (permuted) row gets
// its own scale sa[g] = max(amax_g, 1e-10) / 127 from a pass over the
// group alone, then is quantized with it; a group holding NaN or Inf gets
// sa[g] = NaN, qa and sums[g] 0 (the row's outputs are then NaN, as per
// token). Pass 1 over the group reads x again (L1) and uses the |x| mask
// from memory, since its register may hold x[0] (act-order bf16;
// jit/act_quant_plan.h).
#ifndef W4JIT_JIT_ACT_QUANTIZER_GENERATOR_H_
#define W4JIT_JIT_ACT_QUANTIZER_GENERATOR_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/kernel_key.h"
#include "jit/act_quant_plan.h"
#include "jit/da8w4_layout.h"
#include "jit/emit_util.h"
#include "jit/generator.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// The output (qa, sums) is in the layout of jit/da8w4_layout.h
// (QaRowStride, SumsRowStride), which the GEMM kernels read.
struct ActQuantArgs {
  const void* x;      // row 0 of x (act dtype)
  int64_t ldx_bytes;  // distance between rows of x
  int64_t rows;       // >= 1
  int8_t* qa;         // [rows][QaRowStride(k)]
  float* sa;          // [rows][SaRowStride(groups, per_group) / 4]
  int32_t* sums;      // [rows][SumsRowStride(groups) / 4]
  // Act-order only (ActQuantConfig::permuted): k_perm[j] for j < K, then
  // at least 16 more readable entries (their values are never used).
  const int32_t* k_perm;
};
// The padding an act-order table needs past its K entries.
inline constexpr int64_t kActOrderTablePad = 16;
using ActQuantFn = void (*)(const ActQuantArgs*);

struct ActQuantConfig {
  IsaTier isa = IsaTier::kAvx2;  // IsaFeature::kAvx512: zmm code
  DType act_dtype = DType::kBF16;
  int64_t k = 0;
  int64_t group_size = 0;  // resolved: K for per-channel; any value >= 1
                           // dividing K
  bool permuted = false;   // act-order: read x through ActQuantArgs::k_perm
  bool per_group = false;  // one scale per (row, group), not per row
  // Act-order, per row: the columns of x pass 1 reads (in order) when x
  // has fewer than K, 0 for K. A K-shard of an act-order checkpoint is
  // padded to K' > its x's columns (runtime/formats/act_order.h); every
  // column of x appears in k_perm, the padding repeats some, so the row
  // maximum over x's own columns is the one over the permuted row.
  int64_t x_k = 0;

  // The kernel-cache key is the config (dispatch/config_key.h): every
  // field, with those that do not change the code here made canonical.
  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.isa, c.act_dtype, c.k, c.group_size, c.permuted,
                    c.per_group, c.x_k);
  }
  // The tier whose code runs; x_k is 0 when it is K.
  ActQuantConfig Canonical() const;
  // The columns of x pass 1 (per row) reads: x_k, or K.
  int64_t RowMaxColumns() const { return x_k != 0 ? x_k : k; }
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const ActQuantConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const ActQuantConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const ActQuantConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<ActQuantConfig>());

// Why this config cannot be generated (a group that does not divide K, an
// activation dtype other than bf16 / f32), or OK. With the canonical form
// and the name in jit/act_quant_config.cc.
absl::Status CheckActQuantConfig(const ActQuantConfig& config);

class ActQuantizerGenerator : public Generator {
 public:
  explicit ActQuantizerGenerator(const ActQuantConfig& config);

 protected:
  void Generate() override;

 private:
  // Loads chunk `lanes` values of x at `addr` as f32 into `v`; lanes past
  // `count` (< lanes) read as 0 and their memory is never touched.
  void LoadF32(const Xbyak::Xmm& v, const Xbyak::RegExp& at, int count,
               const Xbyak::Opmask& kmask, const Xbyak::Xmm& vmask);
  // The same for act-order: lanes [0, count) <- x[k_perm[j]] for the table
  // entries j at `table`, gathered from the row of x; `idx` is clobbered.
  void GatherF32(const Xbyak::Xmm& v, const Xbyak::Xmm& idx,
                 const Xbyak::Address& table, int count,
                 const Xbyak::Opmask& kmask, const Xbyak::Xmm& vmask);
  void EmitAbsMax();  // pass 1 -> the maximum's bits (ActQuantPlan)
  // sa = max(amax, 1e-10f) / 127.0f from pass 1's maximum, in f32 exactly
  // as the reference: stored at `dst` and broadcast for pass 2.
  void EmitScale(const Xbyak::Address& dst);
  void EmitQuantizeGroups();  // pass 2
  // The cursors of pass 2 (x, qa, sums, act-order table) at the row start.
  void EmitGroupCursors();
  // Pass 2 of the group at the cursors: qa, sums[g]; moves the x, qa and
  // table cursors past the group.
  void EmitQuantizeGroup();
  // Per group: both passes for each group of the row (its own sa cursor).
  void EmitPerGroupRow();
  void EmitGroupAbsMax();  // of the group at the cursors, as EmitAbsMax
  void EmitNonFiniteGroup();
  // Moves the x, qa and table cursors by `count` elements of x.
  void AdvanceCursors(int64_t count);
  // Pass 2 of one chunk of `count` (<= lanes) values.
  void EmitChunk(int slot, int count);
  void EmitNonFiniteRow();
  // Lane 0 of vector register v <- max (or sum) of its 32-bit lanes; t is
  // clobbered.
  void ReduceLanes(int v, int t, bool max);
  // All-ones in 32-bit lanes [0, count), zeros above (AVX2 masked loads).
  Xbyak::Address LaneMask(int count);

  const ActQuantConfig cfg_;
  const ActQuantPlan plan_;  // registers by role (jit/act_quant_plan.h)
  VecEmitter vec_;
  const int elem_bytes_;
  const int64_t groups_;
  ConstPool pool_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_ACT_QUANTIZER_GENERATOR_H_
