#include "torch/content_fingerprint.h"

#include <ATen/Parallel.h>
#include <absl/hash/hash.h>
#include <absl/strings/string_view.h>
#include <absl/types/span.h>

#include <algorithm>
#include <atomic>
#include <vector>

namespace w4jit::torch_ext {
namespace {

constexpr int64_t kChunkBytes = int64_t{1} << 20;
std::atomic<uint64_t> computed{0};

// Bytes from the first element to the end of the last one (strides are
// never negative in torch).
int64_t SpanBytes(const at::Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t extent = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    extent += (t.size(d) - 1) * t.stride(d);
  }
  return extent * static_cast<int64_t>(t.element_size());
}

}  // namespace

uint64_t ContentFingerprint(const at::Tensor& t) {
  computed.fetch_add(1, std::memory_order_relaxed);
  const int64_t bytes = SpanBytes(t);
  const char* base = static_cast<const char*>(t.data_ptr());
  const int64_t chunks = (bytes + kChunkBytes - 1) / kChunkBytes;
  std::vector<size_t> hashes(static_cast<size_t>(chunks));
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const int64_t off = c * kChunkBytes;
      const int64_t len = std::min(kChunkBytes, bytes - off);
      hashes[c] = absl::Hash<absl::string_view>{}(
          absl::string_view(base + off, static_cast<size_t>(len)));
    }
  });
  return absl::HashOf(absl::MakeConstSpan(hashes), bytes);
}

uint64_t FingerprintsComputed() { return computed.load(); }

}  // namespace w4jit::torch_ext
