// The DA8W4 GEMM kernel's config as the cache and the runtime see it: the
// check of what can be generated, the canonical form and the name
// (jit/da8w4_gemm_generator.h declares them).
#include <algorithm>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "dispatch/isa_traits.h"
#include "jit/da8w4_amx_plan.h"
#include "jit/da8w4_gemm_generator.h"
#include "jit/emit_util.h"

namespace w4jit::internal {

absl::Status CheckDa8w4GemmConfig(const Da8w4GemmConfig& c) {
  const Da8w4Layout& lay = c.layout;
  const IsaTraits& isa = TraitsOf(c.isa);
  if (TraitsOf(c.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError("DA8W4 kernels need AVX2 or AVX-512");
  }
  if (absl::Status s = CheckPrefetchDistance(c.prefetch); !s.ok()) return s;
  if (lay.lanes != isa.lanes32()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layout lanes ", lay.lanes, " do not match ", ToString(c.isa)));
  }
  if (lay.n <= 0 || lay.k <= 0 || lay.group_size <= 0 ||
      lay.k % lay.group_size != 0) {
    return absl::InvalidArgumentError("bad DA8W4 layout shape");
  }
  if (lay.groups() > 1 && lay.group_size % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("group ", lay.group_size, " is not a multiple of 4"));
  }
  if (c.amx) {
    const absl::StatusOr<Da8w4AmxPlan> amx =
        MakeDa8w4AmxPlan(c.mr, c.nblk, c.decoded, lay);
    if (!amx.ok()) return amx.status();
  } else {
    const absl::StatusOr<Da8w4GemmPlan> plan =
        MakeDa8w4GemmPlan(c.isa, c.mr, c.nblk, c.decoded);
    if (!plan.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(plan.status().message(), " (", ToString(c.isa), ")"));
    }
    if (c.chunk_quads < 1 || c.chunk_quads > plan->max_chunk_quads) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk of ", c.chunk_quads, " quads not in [1, ",
                       plan->max_chunk_quads, "]"));
    }
  }
  if (c.out_dtype != DType::kF32 && c.out_dtype != DType::kBF16) {
    return absl::InvalidArgumentError("output must be f32 or bf16");
  }
  if (c.epilogue.silu_mul && (lay.n % lay.block_cols() != 0 || c.out_n <= 0 ||
                              c.out_n > lay.blocks() * lay.lanes ||
                              c.out_n <= (lay.blocks() - 1) * lay.lanes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("silu_mul: ", c.out_n, " output columns do not fit the ",
                     lay.n, " interleaved columns"));
  }
  // Every address is base + a displacement that must fit 32 bits.
  const int64_t limit = std::numeric_limits<int32_t>::max();
  const int64_t wmul = c.decoded ? 2 : 1;
  const int64_t max_disp = std::max(
      {wmul * ((c.nblk - 1) * lay.block_weight_bytes() +
               int64_t{c.chunk_quads} * lay.quad_bytes()),
       c.nblk * lay.block_param_bytes(), c.nblk * lay.block_scale_bytes(),
       c.mr * (QaRowStride(lay.k) + SumsRowStride(lay.groups()))});
  if (max_disp >= limit) {
    return absl::InvalidArgumentError(
        "tile spans more than 2 GiB of packed data");
  }
  return absl::OkStatus();
}

Da8w4GemmConfig Da8w4GemmConfig::Canonical() const {
  Da8w4GemmConfig c = *this;
  c.isa = TraitsOf(c.isa).vector_tier;
  if (!c.epilogue.silu_mul) c.out_n = 0;
  if (c.decoded) c.prefetch = 0;
  if (c.amx) c.chunk_quads = 8;  // the tiles step K by their plan
  return c;
}

KernelName Da8w4GemmConfig::NameParts() const {
  const Da8w4GemmConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kDa8w4Gemm;
  // The tile kernels are named for the feature they need.
  key.isa = c.amx ? LeastTierWith(IsaFeature::kAmxInt8) : c.isa;
  key.act_dtype = c.act_dtype;
  key.out_dtype = c.out_dtype;
  key.weight_type = c.weight_type;
  key.group_size = c.layout.group_size;
  key.per_channel = c.layout.groups() == 1;
  key.n = c.layout.n;
  key.k = c.layout.k;
  key.mr = c.mr;
  key.nr = c.nblk * c.layout.block_cols();
  key.bias = c.bias;
  key.n_tail = c.n_tail;
  key.decoded = c.decoded;
  key.chunk_quads = c.chunk_quads;
  SetNameEpilogue(&key, c.epilogue);
  key.out_n = c.out_n;
  key.act_per_group = c.act_per_group;
  key.prefetch = c.prefetch;
  key.meta_dtype = c.layout.scale_dtype;
  return key;
}

}  // namespace w4jit::internal
