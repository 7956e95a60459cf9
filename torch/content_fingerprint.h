// Fingerprints of a tensor's bytes, for the layer cache's rule on inference
// tensors (layer_cache.h), which have no version counter.
#ifndef W4JIT_TORCH_CONTENT_FINGERPRINT_H_
#define W4JIT_TORCH_CONTENT_FINGERPRINT_H_

#include <ATen/ATen.h>

#include <cstdint>

namespace w4jit::torch_ext {

// Hashes the bytes from t's first element to its last (the whole span its
// sizes and strides reach, gaps included, so no copy is made), in 1 MiB
// chunks hashed in parallel on ATen's intra-op pool (serially inside a
// parallel region) and combined in order. Any change to any of those bytes
// changes the result except with probability about 2^-64 (absl::Hash,
// seeded once per process: values are comparable within a process only).
// The cost is a read of the span: about 30 GB/s per core, i.e. as much as
// the weight read of an M = 1 call (W4JIT_WEIGHT_CHECK=content only).
uint64_t ContentFingerprint(const at::Tensor& t);

// The tripwire (W4JIT_WEIGHT_CHECK=sampled, the default): a hash of
// kSampleLines 64-byte lines spread evenly over t's span (its first and
// last line among them), or of the whole span when it is that short. A
// fixed cost whatever the tensor's size (well under a microsecond); it sees
// a write that changes any sampled line, so a whole-tensor update (copy_,
// load_state_dict, new quantized weights) is seen, and a sparse edit that
// misses every sampled line is not.
inline constexpr int kSampleLines = 8;
uint64_t SampledFingerprint(const at::Tensor& t);

// What this process has read to fingerprint tensors (tests: the default
// check must never read a weight whole, normal tensors never anything).
struct FingerprintCounts {
  uint64_t content_calls = 0;  // ContentFingerprint calls
  uint64_t content_bytes = 0;  // bytes they hashed
  uint64_t sampled_calls = 0;  // SampledFingerprint calls
  uint64_t sampled_bytes = 0;  // bytes they hashed
};
FingerprintCounts FingerprintsComputed();

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_CONTENT_FINGERPRINT_H_
