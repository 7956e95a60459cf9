#include "torch/layer_cache.h"

#include <algorithm>
#include <utility>

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

uint64_t InferenceFingerprint(const c10::optional<at::Tensor>& t) {
  if (!t.has_value() || !t->defined() || !t->is_inference()) return 0;
  return ContentFingerprint(*t);
}

TensorKey::TensorKey(const at::Tensor& t, uint64_t fingerprint)
    : present_(true),
      storage_(t.storage().getWeakStorageImpl()),
      impl_(t.storage().unsafeGetStorageImpl()),
      inference_(t.is_inference()),
      contents_(Contents(t, fingerprint)),
      offset_(t.storage_offset()),
      dtype_(t.scalar_type()),
      sizes_(t.sizes().begin(), t.sizes().end()),
      strides_(t.strides().begin(), t.strides().end()) {}

bool TensorKey::Matches(const c10::optional<at::Tensor>& t,
                        uint64_t fingerprint) const {
  if (!t.has_value() || !t->defined()) return !present_;
  if (!present_) return false;
  const at::Tensor& x = *t;
  // Identity first (cheap), then liveness: while we hold the weak
  // reference the StorageImpl cannot be reused, so equal pointers mean the
  // same storage unless it has expired.
  return SameView(x) && !storage_.expired() && x.is_inference() == inference_ &&
         Contents(x, fingerprint) == contents_;
}

bool TensorKey::SameView(const at::Tensor& x) const {
  return present_ && x.has_storage() &&
         x.storage().unsafeGetStorageImpl() == impl_ &&
         x.storage_offset() == offset_ && x.scalar_type() == dtype_ &&
         x.sizes() == c10::IntArrayRef(sizes_) &&
         x.strides() == c10::IntArrayRef(strides_);
}

std::shared_ptr<const Layer> LayerCache::GetOrBuild(uint64_t signature,
                                                    const OpTensors& tensors,
                                                    const Builder& build) {
  const c10::StorageImpl* weight = tensors[0]->storage().unsafeGetStorageImpl();
  // Inference tensors' fingerprints, once per call, outside the lock.
  std::array<uint64_t, 4> prints{};
  for (size_t i = 0; i < tensors.size(); ++i) {
    prints[i] = InferenceFingerprint(tensors[i]);
  }
  auto matches = [&](const Entry& e) {
    if (e.signature != signature) return false;
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!e.keys[i].Matches(tensors[i], prints[i])) return false;
    }
    return true;
  };
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(weight);
    if (it != map_.end()) {
      for (const Entry& e : it->second) {
        if (matches(e)) return e.layer;
      }
    }
  }
  // Miss: build outside the lock (it JITs and repacks, milliseconds or
  // more); two threads missing together both build, and one result wins.
  std::shared_ptr<const Layer> layer = build();
  Entry entry{signature, {}, layer};
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].has_value() && tensors[i]->defined()) {
      entry.keys[i] = TensorKey(*tensors[i], prints[i]);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry>& bucket = map_[weight];
  // An entry for the same weight view and signature that no longer matches
  // (modified in place, other scales) is replaced, not kept alongside.
  bucket.erase(std::remove_if(bucket.begin(), bucket.end(),
                              [&](const Entry& e) {
                                return e.signature == signature &&
                                       e.keys[0].SameView(*tensors[0]) &&
                                       !matches(e);
                              }),
               bucket.end());
  bool found = false;
  for (const Entry& e : bucket) found = found || matches(e);
  if (!found) bucket.push_back(std::move(entry));
  SweepLocked();
  return layer;
}

size_t LayerCache::SweepLocked() {
  size_t live = 0;
  for (auto it = map_.begin(); it != map_.end();) {
    std::vector<Entry>& bucket = it->second;
    bucket.erase(
        std::remove_if(bucket.begin(), bucket.end(),
                       [](const Entry& e) {
                         return std::any_of(
                             e.keys.begin(), e.keys.end(),
                             [](const TensorKey& k) { return k.expired(); });
                       }),
        bucket.end());
    live += bucket.size();
    it = bucket.empty() ? map_.erase(it) : std::next(it);
  }
  return live;
}

size_t LayerCache::Sweep() {
  std::lock_guard<std::mutex> lock(mu_);
  return SweepLocked();
}

void LayerCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  map_.clear();
}

LayerCache& LayerCache::Global() {
  static LayerCache* cache = new LayerCache;  // used until exit
  return *cache;
}

}  // namespace w4jit::torch_ext
