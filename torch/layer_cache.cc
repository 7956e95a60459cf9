#include "torch/layer_cache.h"

#include "torch/content_fingerprint.h"

namespace w4jit::torch_ext {

namespace {

// What stands for t's contents (layer_cache.h): the version counter of a
// normal tensor, the given fingerprint of an inference tensor.
uint64_t Contents(const at::Tensor& t, uint64_t fingerprint) {
  if (t.is_inference()) return fingerprint;
  return t.unsafeGetTensorImpl()->version_counter().current_version();
}

}  // namespace

uint64_t InferenceFingerprint(const c10::optional<at::Tensor>& t,
                              WeightCheck check) {
  if (!t.has_value() || !t->defined() || !t->is_inference()) return 0;
  switch (check) {
    case WeightCheck::kIdentity:
      return 0;
    case WeightCheck::kSampled:
      return SampledFingerprint(*t);
    case WeightCheck::kContent:
      return ContentFingerprint(*t);
  }
  return 0;
}

TensorKey::TensorKey(const at::Tensor& t, WeightCheck check,
                     uint64_t fingerprint)
    : present_(true),
      storage_(t.storage().getWeakStorageImpl()),
      impl_(t.storage().unsafeGetStorageImpl()),
      inference_(t.is_inference()),
      check_(check),
      contents_(Contents(t, fingerprint)),
      offset_(t.storage_offset()),
      dtype_(t.scalar_type()),
      sizes_(t.sizes().begin(), t.sizes().end()),
      strides_(t.strides().begin(), t.strides().end()) {}

bool TensorKey::Matches(const c10::optional<at::Tensor>& t, WeightCheck check,
                        uint64_t fingerprint) const {
  if (!t.has_value() || !t->defined()) return !present_;
  if (!present_) return false;
  const at::Tensor& x = *t;
  // Identity first (cheap), then liveness: while we hold the weak
  // reference the StorageImpl cannot be reused, so equal pointers mean the
  // same storage unless it has expired.
  // An inference tensor's entry made under another check recorded another
  // kind of fingerprint: a miss, rebuilt under the current one.
  return SameView(x) && !storage_.expired() && x.is_inference() == inference_ &&
         (!inference_ || check == check_) &&
         Contents(x, fingerprint) == contents_;
}

bool TensorKey::SameView(const at::Tensor& x) const {
  return present_ && x.has_storage() &&
         x.storage().unsafeGetStorageImpl() == impl_ &&
         x.storage_offset() == offset_ && x.scalar_type() == dtype_ &&
         x.sizes() == c10::IntArrayRef(sizes_) &&
         x.strides() == c10::IntArrayRef(strides_);
}

}  // namespace w4jit::torch_ext
