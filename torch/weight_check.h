// How the op caches (layer_cache.h) tell that an inference tensor they built
// a layer from still holds the same bytes: W4JIT_WEIGHT_CHECK, read once at
// the first call, or set by torch.ops.w4jit.set_weight_check. Normal tensors
// always use their version counter, which costs nothing, whatever this says.
#ifndef W4JIT_TORCH_WEIGHT_CHECK_H_
#define W4JIT_TORCH_WEIGHT_CHECK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace w4jit::torch_ext {

enum class WeightCheck {
  // Identity alone (storage, offset, dtype, sizes, strides): an in-place
  // write inside inference mode is seen only after flush_weight_cache().
  kIdentity = 0,
  // Identity plus SampledFingerprint (the default): a fixed few lines per
  // tensor, so whole-tensor updates are seen at a sub-microsecond cost.
  kSampled = 1,
  // Identity plus ContentFingerprint: every write is seen, at the cost of
  // reading every inference tensor whole on every call.
  kContent = 2,
};

// "identity", "sampled" or "content"; anything else is an error naming it.
absl::StatusOr<WeightCheck> ParseWeightCheck(absl::string_view name);
const char* WeightCheckName(WeightCheck check);

// The process's setting: W4JIT_WEIGHT_CHECK at the first call (unset or
// empty: kSampled; a bad value throws, naming it, from every op call until
// it is fixed or SetWeightCheck overrides it).
WeightCheck CurrentWeightCheck();
void SetWeightCheck(WeightCheck check);

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_WEIGHT_CHECK_H_
