// A 64-bit fingerprint of every byte a tensor's elements occupy, for the
// layer cache's rule on inference tensors (layer_cache.h), which have no
// version counter.
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
// The cost is a read of the span: about 30 GB/s per core.
uint64_t ContentFingerprint(const at::Tensor& t);

// How many fingerprints this process has computed (for tests: normal
// tensors must never need one).
uint64_t FingerprintsComputed();

}  // namespace w4jit::torch_ext

#endif  // W4JIT_TORCH_CONTENT_FINGERPRINT_H_
