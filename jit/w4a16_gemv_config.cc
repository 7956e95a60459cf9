// The W4A16 int4 kernel's config as the cache and the runtime see it: the
// check of what can be generated (a register plan for every tile height,
// jit/w4a16_gemv_plan.h), the canonical form and the name
// (jit/w4a16_gemv_generator.h declares them).
#include <string>

#include "absl/strings/str_format.h"
#include "dispatch/isa_traits.h"
#include "jit/emit_util.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_gemv_plan.h"

namespace w4jit::internal {

absl::Status CheckW4a16GemvConfig(const W4a16GemvConfig& c) {
  if (TraitsOf(c.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError("W4A16 kernels need at least AVX2");
  }
  if (absl::Status s = CheckPrefetchDistance(c.prefetch); !s.ok()) return s;
  const bool dot = c.flavor == Flavor::kBf16Dot;
  if (c.flavor != Flavor::kF32Fma && !dot) {
    return absl::InvalidArgumentError("no W4A16 flavour in the config");
  }
  const IsaTraits& isa = TraitsOf(c.isa);
  if (dot && !isa.Has(IsaFeature::kAvx512Bf16)) {
    return absl::InvalidArgumentError("the bf16-dot flavour needs AVX512_BF16");
  }
  if (c.out_dtype != DType::kF32 && c.out_dtype != DType::kBF16) {
    return absl::InvalidArgumentError("output must be f32 or bf16");
  }
  const int step_k = W4a16GemvStepK(c.flavor);
  if (c.group_size <= 0 || c.group_size % step_k != 0 || c.k <= 0 ||
      c.k % c.group_size != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group %d / K %d: the group must be a multiple of %d dividing K",
        c.group_size, c.k, step_k));
  }
  const int lanes = isa.lanes32();
  if (c.nr <= 0 || c.nr % lanes != 0 || c.n <= 0 || c.mr <= 0) {
    return absl::InvalidArgumentError("bad N, block width or row tile");
  }
  const int nv = c.nr / lanes;
  const int tv = c.tile_vectors == 0 ? nv : c.tile_vectors;
  if (c.tile_vectors < 0 || c.tile_vectors > nv || nv % tv != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a tile of %d vectors does not divide a block of %d",
                        c.tile_vectors, nv));
  }
  // Every tile height the row loop emits has a register plan.
  for (int rows = 1; rows <= c.mr; ++rows) {
    if (absl::Status s = MakeW4a16GemvPlan(c, rows).status(); !s.ok()) {
      return s;
    }
  }
  if (dot && c.weight_type != WeightType::kS4) {
    return absl::InvalidArgumentError(
        "the bf16-dot flavour decodes s4 nibbles: u4 layers fold their zero "
        "points into float ones (w4a16_layout.h)");
  }
  if (c.float_zero && c.weight_type != WeightType::kS4) {
    return absl::InvalidArgumentError(
        "float zero points decode the nibbles as s4 (u - 8): weight_type "
        "must be s4 in the config");
  }
  if (c.folded_zero && (!dot || !c.float_zero)) {
    return absl::InvalidArgumentError(
        "folded zero points are float zero points of the bf16-dot flavour");
  }
  if (c.meta_dtype != DType::kF32 && c.weight_type == WeightType::kU4) {
    return absl::InvalidArgumentError(
        "integer zero points need f32 meta (w4a16_layout.h)");
  }
  if (c.epilogue.silu_mul &&
      (tv % 2 != 0 || c.out_n <= 0 || 2 * c.out_n > c.n)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "silu_mul needs an even number of vectors per tile (%d) and N / 2 "
        "output columns (%d of %d)",
        tv, c.out_n, c.n));
  }
  return absl::OkStatus();
}

W4a16GemvConfig W4a16GemvConfig::Canonical() const {
  W4a16GemvConfig c = *this;
  if (!c.epilogue.silu_mul) c.out_n = 0;
  return c;
}

KernelName W4a16GemvConfig::NameParts() const {
  const W4a16GemvConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kW4a16Gemm;
  key.isa = c.isa;
  key.flavor = c.flavor;
  key.act_dtype = c.flavor == Flavor::kBf16Dot ? DType::kBF16 : DType::kF32;
  key.out_dtype = c.out_dtype;
  key.weight_type = c.weight_type;
  key.float_zero = c.float_zero;
  key.folded_zero = c.folded_zero;
  key.meta_dtype = c.meta_dtype;
  key.group_size = c.group_size;
  key.per_channel = c.per_channel;
  key.n = c.n;
  key.k = c.k;
  key.mr = c.mr;
  key.nr = c.nr;
  key.tile_vectors = c.tile_vectors;
  key.bias = c.bias;
  SetNameEpilogue(&key, c.epilogue);
  key.out_n = c.out_n;
  key.prefetch = c.prefetch;
  return key;
}

}  // namespace w4jit::internal
