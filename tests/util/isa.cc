#include "tests/util/isa.h"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dispatch/isa_traits.h"

namespace w4jit::testing {

using internal::Flavor;
using internal::HostCpu;
using internal::IsaTier;

namespace {

// Which tiers' kernels some test ran: bit (1 << tier value).
std::atomic<uint32_t> ran{0};
// Which IsaPaths some test ran with their flavour forced: bit (1 << index
// in IsaPaths()).
std::atomic<uint32_t> ran_paths{0};

// Fails the run when a tier the CPU has was never run (see isa.h).
class IsaCoverageCheck : public ::testing::Environment {
 public:
  void TearDown() override {
    const char* env = std::getenv("W4JIT_TEST_ISA_COVERAGE");
    const bool forced = env != nullptr && std::string(env) == "1";
    const bool whole_suite = GTEST_FLAG_GET(filter) == "*";
    if (!forced && !whole_suite) return;
    const std::vector<IsaTier> missing = IsaTiersNeverRun();
    if (!missing.empty()) {
      std::vector<std::string> names;
      for (IsaTier t : missing) names.push_back(internal::ToString(t));
      ADD_FAILURE() << "this CPU has " << absl::StrJoin(names, ", ")
                    << " but no kernel test ran it (a tier missing from "
                       "tests/util/isa.h's IsaPaths, or tests that skip it)";
    }
    const std::vector<IsaPath> paths = IsaPathsNeverRun();
    if (!paths.empty()) {
      std::vector<std::string> names;
      for (const IsaPath& p : paths) {
        names.push_back(absl::StrCat(p.suffix, " (", p.flavour, ")"));
      }
      ADD_FAILURE() << "this CPU can run the ISA paths "
                    << absl::StrJoin(names, ", ")
                    << " but no test ran them with their flavour forced "
                       "(StartIsaPathRun)";
    }
  }
};

const ::testing::Environment* const kCoverage =
    ::testing::AddGlobalTestEnvironment(new IsaCoverageCheck);

}  // namespace

bool CanRunTier(IsaTier tier) {
  return internal::HasFeaturesOf(HostCpu().isa_cap, tier);
}

std::string WhyCannotRunTier(IsaTier tier) {
  if (!internal::HasFeaturesOf(HostCpu().isa, tier)) {
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

const std::vector<IsaPath>& IsaPaths() {
  // Vector width and name suffix from the tier's row of
  // dispatch/isa_traits.h.
  auto path = [](IsaTier tier, Flavor flavor, const char* flavour) {
    const internal::IsaTraits& t = internal::TraitsOf(tier);
    return IsaPath{tier, flavor, 8 * t.vector_bytes, t.suffix, flavour};
  };
  static const std::vector<IsaPath>* paths = new std::vector<IsaPath>{
      path(IsaTier::kAvx2, Flavor::kF32Fma, "fma"),
      path(IsaTier::kAvx512Vnni, Flavor::kF32Fma, "fma"),
      path(IsaTier::kAvx512Bf16, Flavor::kBf16Dot, "bf16dot"),
  };
  return *paths;
}

std::vector<IsaTier> IsaTiers() {
  std::vector<IsaTier> tiers;
  for (const IsaPath& p : IsaPaths()) tiers.push_back(p.tier);
  return tiers;
}

std::vector<IsaTier> IsaTiersWithRef() {
  std::vector<IsaTier> tiers = {IsaTier::kRef};
  for (IsaTier t : IsaTiers()) tiers.push_back(t);
  return tiers;
}

std::vector<IsaTier> Da8w4IsaTiers() {
  std::vector<IsaTier> tiers;
  // DA8W4 code needs only the vector width: the tiers that run their own.
  for (IsaTier t : IsaTiers()) {
    if (internal::TraitsOf(t).vector_tier == t) tiers.push_back(t);
  }
  return tiers;
}

void PrintTo(const IsaPath& path, std::ostream* os) {
  *os << path.suffix << " (" << path.flavour << ", " << path.vector_bits
      << "-bit)";
}

std::string IsaPathName(const ::testing::TestParamInfo<IsaPath>& info) {
  return info.param.suffix;
}

std::string IsaTierName(const ::testing::TestParamInfo<IsaTier>& info) {
  return std::string(internal::ToString(info.param));
}

bool StartIsaRun(IsaTier tier) {
  if (!CanRunTier(tier)) return false;
  ran.fetch_or(1u << static_cast<int>(tier));
  return true;
}

bool StartIsaPathRun(const IsaPath& path) {
  if (!StartIsaRun(path.tier)) return false;
  const std::vector<IsaPath>& paths = IsaPaths();
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i].tier == path.tier && paths[i].flavor == path.flavor &&
        paths[i].vector_bits == path.vector_bits) {
      ran_paths.fetch_or(1u << i);
    }
  }
  return true;
}

std::vector<IsaPath> IsaPathsNeverRun() {
  std::vector<IsaPath> missing;
  const std::vector<IsaPath>& paths = IsaPaths();
  for (size_t i = 0; i < paths.size(); ++i) {
    if (CanRunTier(paths[i].tier) && (ran_paths.load() & (1u << i)) == 0) {
      missing.push_back(paths[i]);
    }
  }
  return missing;
}

std::vector<IsaTier> IsaTiersNeverRun() {
  (void)kCoverage;
  // Every JIT tier the cap runs, listed in IsaPaths or not.
  std::vector<IsaTier> missing;
  for (const internal::IsaTraits& t : internal::kIsaTraits) {
    const uint32_t bit = 1u << static_cast<int>(t.tier);
    if (t.vector_bytes > 0 && CanRunTier(t.tier) && (ran.load() & bit) == 0) {
      missing.push_back(t.tier);
    }
  }
  return missing;
}

}  // namespace w4jit::testing

namespace w4jit::internal {

void PrintTo(IsaTier tier, std::ostream* os) { *os << ToString(tier); }

}  // namespace w4jit::internal
