#include "torch/weight_check.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace w4jit::torch_ext {
namespace {

// -1 until the environment has been read or a value set.
std::atomic<int> setting{-1};

}  // namespace

absl::StatusOr<WeightCheck> ParseWeightCheck(absl::string_view name) {
  if (name == "identity") return WeightCheck::kIdentity;
  if (name == "sampled") return WeightCheck::kSampled;
  if (name == "content") return WeightCheck::kContent;
  return absl::InvalidArgumentError(
      absl::StrCat("W4JIT_WEIGHT_CHECK = '", name,
                   "' is not 'identity', 'sampled' or 'content'"));
}

const char* WeightCheckName(WeightCheck check) {
  switch (check) {
    case WeightCheck::kIdentity:
      return "identity";
    case WeightCheck::kSampled:
      return "sampled";
    case WeightCheck::kContent:
      return "content";
  }
  return "?";
}

WeightCheck CurrentWeightCheck() {
  const int v = setting.load(std::memory_order_relaxed);
  if (v >= 0) return static_cast<WeightCheck>(v);
  const char* env = std::getenv("W4JIT_WEIGHT_CHECK");
  if (env == nullptr || *env == '\0') {
    setting.store(static_cast<int>(WeightCheck::kSampled));
    return WeightCheck::kSampled;
  }
  absl::StatusOr<WeightCheck> parsed = ParseWeightCheck(env);
  TORCH_CHECK(parsed.ok(), "w4jit: ", std::string(parsed.status().message()));
  setting.store(static_cast<int>(*parsed));
  return *parsed;
}

void SetWeightCheck(WeightCheck check) {
  setting.store(static_cast<int>(check), std::memory_order_relaxed);
}

}  // namespace w4jit::torch_ext
