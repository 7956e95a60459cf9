#include "torch/content_fingerprint.h"

#include <ATen/Parallel.h>
#include <absl/hash/hash.h>
#include <absl/strings/string_view.h>
#include <absl/types/span.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <vector>

namespace w4jit::torch_ext {
namespace {

constexpr int64_t kChunkBytes = int64_t{1} << 20;
constexpr int64_t kLineBytes = 64;

std::atomic<uint64_t> content_calls{0};
std::atomic<uint64_t> content_bytes{0};
std::atomic<uint64_t> sampled_calls{0};
std::atomic<uint64_t> sampled_bytes{0};

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
  const int64_t bytes = SpanBytes(t);
  content_calls.fetch_add(1, std::memory_order_relaxed);
  content_bytes.fetch_add(static_cast<uint64_t>(bytes),
                          std::memory_order_relaxed);
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

uint64_t SampledFingerprint(const at::Tensor& t) {
  const int64_t bytes = SpanBytes(t);
  const char* base = static_cast<const char*>(t.data_ptr());
  constexpr int64_t kSampleBytes = kSampleLines * kLineBytes;
  sampled_calls.fetch_add(1, std::memory_order_relaxed);
  if (bytes <= kSampleBytes) {
    sampled_bytes.fetch_add(static_cast<uint64_t>(bytes),
                            std::memory_order_relaxed);
    return absl::HashOf(absl::string_view(base, static_cast<size_t>(bytes)),
                        bytes);
  }
  // Line i starts at i/(L-1) of the way to the last full line: the first
  // and the last line are always read, the others evenly between. The
  // lines are copied out first so that their loads overlap (independent
  // misses when the weight has left the caches) before one hash.
  std::array<char, kSampleBytes> lines;
  const int64_t last = bytes - kLineBytes;
  for (int i = 0; i < kSampleLines; ++i) {
    const int64_t off = last * i / (kSampleLines - 1);
    std::memcpy(lines.data() + i * kLineBytes, base + off, kLineBytes);
  }
  sampled_bytes.fetch_add(kSampleBytes, std::memory_order_relaxed);
  return absl::HashOf(absl::string_view(lines.data(), lines.size()), bytes);
}

FingerprintCounts FingerprintsComputed() {
  FingerprintCounts c;
  c.content_calls = content_calls.load();
  c.content_bytes = content_bytes.load();
  c.sampled_calls = sampled_calls.load();
  c.sampled_bytes = sampled_bytes.load();
  return c;
}

}  // namespace w4jit::torch_ext
