#include "tests/util/isa.h"

#include "absl/strings/str_cat.h"

namespace w4jit::testing {

using internal::HostCpu;
using internal::IsaTier;

bool CanRunTier(IsaTier tier) { return HostCpu().isa_cap >= tier; }

std::string WhyCannotRunTier(IsaTier tier) {
  if (HostCpu().isa < tier) {
    return absl::StrCat("this CPU lacks ", internal::ToString(tier));
  }
  return absl::StrCat("W4JIT_ISA=", internal::ToString(HostCpu().isa_cap),
                      " caps the kernels below ", internal::ToString(tier));
}

::testing::AssertionResult KernelNameIs(const std::string& name,
                                        std::string_view flavour,
                                        std::string_view isa) {
  const size_t sep = name.rfind("__");
  if (sep == std::string::npos) {
    return ::testing::AssertionFailure()
           << name << " has no \"__<isa>\" suffix (want " << isa << ")";
  }
  if (std::string_view(name).substr(sep + 2) != isa) {
    return ::testing::AssertionFailure()
           << name << " is not an " << isa << " kernel";
  }
  if (flavour.empty()) return ::testing::AssertionSuccess();
  // "_" + fields + "_" contains "_<flavour>_" iff one field is the flavour.
  const std::string fields = "_" + name.substr(0, sep) + "_";
  if (fields.find("_" + std::string(flavour) + "_") != std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << name << " is not of the " << flavour << " flavour";
}

}  // namespace w4jit::testing
