// The quantizer's config as the cache and the runtime see it: the check of
// what can be generated, the canonical form and the name
// (jit/act_quantizer_generator.h declares them).
#include <string>

#include "absl/strings/str_cat.h"
#include "dispatch/isa_traits.h"
#include "jit/act_quantizer_generator.h"

namespace w4jit::internal {

ActQuantConfig ActQuantConfig::Canonical() const {
  ActQuantConfig c = *this;
  c.isa = TraitsOf(c.isa).vector_tier;
  if (c.x_k == c.k) c.x_k = 0;
  return c;
}

KernelName ActQuantConfig::NameParts() const {
  const ActQuantConfig c = Canonical();
  KernelName key;
  key.family = KernelFamily::kQuantizer;
  key.isa = c.isa;
  key.act_dtype = c.act_dtype;
  key.out_dtype = c.act_dtype;  // unused by the quantizer: kept canonical
  key.group_size = c.group_size;
  key.per_channel = c.group_size == c.k;
  key.k = c.k;
  key.permuted = c.permuted;
  key.act_per_group = c.per_group;
  key.x_k = c.x_k;
  return key;
}

absl::Status CheckActQuantConfig(const ActQuantConfig& c) {
  if (TraitsOf(c.isa).vector_bytes == 0) {
    return absl::InvalidArgumentError("the quantizer needs AVX2 or AVX-512");
  }
  if (c.k <= 0 || c.group_size <= 0 || c.k % c.group_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quantizer: group ", c.group_size, " does not divide K = ", c.k));
  }
  if (c.act_dtype != DType::kF32 && c.act_dtype != DType::kBF16) {
    return absl::InvalidArgumentError("quantizer: x must be bf16 or f32");
  }
  if (c.x_k != 0 && (!c.permuted || c.x_k < 1 || c.x_k > c.k)) {
    return absl::InvalidArgumentError(
        absl::StrCat("quantizer: x_k = ", c.x_k,
                     " needs act-order and 1 <= x_k <= K = ", c.k));
  }
  return absl::OkStatus();
}

}  // namespace w4jit::internal
