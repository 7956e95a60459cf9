#include "dispatch/isa_traits.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace w4jit::internal {

std::string IsaFeatures::str() const {
  struct Named {
    IsaFeature feature;
    const char* name;
  };
  static constexpr Named kNames[] = {
      {IsaFeature::kAvx2, "avx2"},
      {IsaFeature::kAvx512, "avx512"},
      {IsaFeature::kAvx512Vnni, "avx512_vnni"},
      {IsaFeature::kAvx512Bf16, "avx512_bf16"},
      {IsaFeature::kAmxInt8, "amx_int8"},
      {IsaFeature::kAmxBf16, "amx_bf16"},
  };
  std::string s;
  for (const Named& n : kNames) {
    if (Has(n.feature)) absl::StrAppend(&s, s.empty() ? "" : "|", n.name);
  }
  return s.empty() ? "none" : s;
}

std::string IsaTierNames() {
  std::string names;
  for (const IsaTraits& t : kIsaTraits) {
    absl::StrAppend(&names, names.empty() ? "" : ", ", t.env_name);
  }
  return names;
}

}  // namespace w4jit::internal
