// The caches of w4jit layers built by the stateless ops (woq_linear,
// dynamic_qlinear and the post-op family; fused_moe), keyed on the
// identity of the tensors they were built from, with no per-call read of
// their bytes (unless a host asks for one, below).
//
// Each tensor is identified by its StorageImpl, held through a weak
// reference: the weak reference keeps the StorageImpl *object* (not its
// data) from being freed, so no other storage can ever appear at that
// address while the entry exists, and a freed storage shows up as expired.
// A buffer freed and reallocated at the same data address is therefore a
// different key (unlike a key on data_ptr alone, zentorch's, which serves
// the old weight's layer then). The view (offset, dtype, sizes, strides) is
// part of the key too, so a per-call view (`w.t()`, `w.view(torch.int8)`)
// of the same storage finds the same entry. In-place writes:
//
// - A normal tensor: its version counter (bumped by every in-place write
//   through the tensor or its views, inside inference mode too) is
//   recorded, so a weight modified in place is rebuilt, never served
//   stale. Free. Writes through an alias that does not share the version
//   counter (.data, a numpy array over the same memory) cannot be seen.
// - An inference tensor (created under torch.inference_mode(); is_inference
//   is true) has no version counter, and it can still be written in place
//   inside inference mode. What is recorded instead is the process's
//   WeightCheck (weight_check.h): nothing (identity), a hash of a fixed
//   few sampled lines (sampled, the default: whole-tensor updates are
//   seen, at a fixed sub-microsecond cost) or of every byte (content: every
//   write is seen, at one read of the tensor per call). A host that edits
//   inference weights sparsely in place calls flush_weight_cache() after
//   the edit (as zentorch's hosts must) or sets W4JIT_WEIGHT_CHECK=content.
#ifndef W4JIT_TORCH_LAYER_CACHE_H_
#define W4JIT_TORCH_LAYER_CACHE_H_

#include <ATen/ATen.h>
#include <c10/util/intrusive_ptr.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "torch/weight_check.h"
#include "w4jit/layer.hpp"
#include "w4jit/moe.hpp"

namespace w4jit::torch_ext {

// What one tensor argument looked like when a layer was built from it.
class TensorKey {
 public:
  TensorKey() = default;  // stands for an absent (None) argument
  // `check` and `fingerprint`: the call's WeightCheck and
  // InferenceFingerprint(t, check).
  TensorKey(const at::Tensor& t, WeightCheck check, uint64_t fingerprint);

  // True if `t` (or its absence) is the same tensor, unmodified, and its
  // storage is still alive; `fingerprint` as for the constructor.
  bool Matches(const c10::optional<at::Tensor>& t, WeightCheck check,
               uint64_t fingerprint) const;
  // Same storage, offset, dtype, sizes and strides, whatever the version.
  bool SameView(const at::Tensor& t) const;
  bool expired() const { return present_ && storage_.expired(); }
  const c10::StorageImpl* storage_impl() const { return impl_; }

 private:
  bool present_ = false;
  c10::weak_intrusive_ptr<c10::StorageImpl> storage_{
      c10::weak_intrusive_ptr<c10::StorageImpl>(
          c10::intrusive_ptr<c10::StorageImpl>())};
  const c10::StorageImpl* impl_ = nullptr;
  bool inference_ = false;
  WeightCheck check_ = WeightCheck::kIdentity;  // inference tensors only
  // The version counter (normal tensors) or the fingerprint of check_
  // (inference tensors).
  uint64_t contents_ = 0;
  int64_t offset_ = 0;
  at::ScalarType dtype_ = at::kByte;
  c10::SmallVector<int64_t, 4> sizes_;
  c10::SmallVector<int64_t, 4> strides_;
};

// For a present inference tensor, what `check` reads of it
// (SampledFingerprint, ContentFingerprint, or nothing: 0); 0 for anything
// else. The `fingerprint` argument of TensorKey for any cache keyed on
// TensorKeys (computed once per call, outside the cache's lock).
uint64_t InferenceFingerprint(const c10::optional<at::Tensor>& t,
                              WeightCheck check);

// The layers one kind of stateless op builds (LayerT: Layer for the linear
// ops, MoeLayer for fused_moe), keyed on `Signature` (whatever else changes
// the layer: op, dtypes, mode) and N tensor arguments in a fixed order,
// the first being the weight: entries are bucketed by its StorageImpl.
template <class LayerT, size_t N, class Signature>
class TensorKeyedCache {
 public:
  using Tensors = std::array<c10::optional<at::Tensor>, N>;
  using Builder = std::function<std::shared_ptr<const LayerT>()>;

  // The layer for (`signature`, `tensors`): the cached one if every tensor
  // still matches, else the result of `build()` (called without the lock
  // held; it may throw, and nothing is cached then).
  std::shared_ptr<const LayerT> GetOrBuild(const Signature& signature,
                                           const Tensors& tensors,
                                           const Builder& build);

  // Drops entries whose tensors have been freed; returns how many remain.
  size_t Sweep() {
    std::lock_guard<std::mutex> lock(mu_);
    return SweepLocked();
  }
  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
  }

  static TensorKeyedCache& Global() {
    static auto* cache = new TensorKeyedCache;  // used until exit
    return *cache;
  }

 private:
  struct Entry {
    Signature signature;
    std::array<TensorKey, N> keys;
    std::shared_ptr<const LayerT> layer;
  };
  size_t SweepLocked();

  std::mutex mu_;
  // Keyed by the weight's StorageImpl; a bucket holds the layers built from
  // the same weight storage (other dtypes, other scales, other views).
  std::unordered_map<const c10::StorageImpl*, std::vector<Entry>> map_;
};

// The linear ops' tensors: weight, scales, zero points, bias (absent ones
// nullopt); the signature packs the op and the activation dtype.
using LayerCache = TensorKeyedCache<Layer, 4, uint64_t>;
using OpTensors = LayerCache::Tensors;
// fused_moe's: w13, w2, their scales, zero points and biases; the
// signature spells the dtype, mode, act_quant and activation.
using MoeCache = TensorKeyedCache<MoeLayer, 8, std::string>;

template <class LayerT, size_t N, class Signature>
std::shared_ptr<const LayerT>
TensorKeyedCache<LayerT, N, Signature>::GetOrBuild(const Signature& signature,
                                                   const Tensors& tensors,
                                                   const Builder& build) {
  const c10::StorageImpl* weight = tensors[0]->storage().unsafeGetStorageImpl();
  // Inference tensors' fingerprints, once per call, outside the lock.
  const WeightCheck check = CurrentWeightCheck();
  std::array<uint64_t, N> prints{};
  for (size_t i = 0; i < N; ++i) {
    prints[i] = InferenceFingerprint(tensors[i], check);
  }
  auto matches = [&](const Entry& e) {
    if (e.signature != signature) return false;
    for (size_t i = 0; i < N; ++i) {
      if (!e.keys[i].Matches(tensors[i], check, prints[i])) return false;
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
  std::shared_ptr<const LayerT> layer = build();
  Entry entry{signature, {}, layer};
  for (size_t i = 0; i < N; ++i) {
    if (tensors[i].has_value() && tensors[i]->defined()) {
      entry.keys[i] = TensorKey(*tensors[i], check, prints[i]);
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

template <class LayerT, size_t N, class Signature>
size_t TensorKeyedCache<LayerT, N, Signature>::SweepLocked() {
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

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_LAYER_CACHE_H_
