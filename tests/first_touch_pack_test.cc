// Packed weights are filled in parallel, cut as a call at M = 1 cuts the
// work (first touch), and are byte for byte what a serial pack gives.
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "base/memory.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "jit/w4a16_layout.h"
#include "runtime/da8w4/da8w4_pack.h"
#include "runtime/threads/parallel.h"
#include "runtime/w4a16/w4a16_pack.h"
#include "tests/util/test_layer.h"
#include "w4jit/parallel.hpp"

namespace w4jit {
namespace {

using internal::CanonicalWeights;

// Fills every buffer with `fill`, so that a byte no pass wrote differs
// between two packs made under different fills.
class FillingAllocator final : public internal::BufferAllocator {
 public:
  explicit FillingAllocator(unsigned char fill) : fill_(fill) {}
  void* Allocate(size_t bytes, size_t) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (p != nullptr) std::memset(p, fill_, bytes);
    return p;
  }
  void Free(void* p, size_t) override { std::free(p); }

 private:
  const unsigned char fill_;
};

template <class V>
bool SameBytes(const V& a, const V& b) {
  return a.size() == b.size() &&
         (a.empty() ||
          std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0);
}

// Runs pack() with 1 thread under one fill and with `threads` threads
// (more than the blocks too) under another.
template <class Packed, class Pack>
void ExpectSerialEqualsParallel(Pack pack,
                                bool (*same)(const Packed&, const Packed&)) {
  static FillingAllocator serial_fill(0xA5), parallel_fill(0x5A);
  auto packed_with = [&](internal::BufferAllocator* a, int threads) {
    internal::ScopedAllocatorHook hook(a);
    SetNumThreads(threads);
    Packed p = pack();
    SetNumThreads(0);
    return p;
  };
  const Packed serial = packed_with(&serial_fill, 1);
  for (int threads : {2, 3, 64}) {
    for (ThreadingBackend b :
         {ThreadingBackend::kPool, ThreadingBackend::kOpenMP}) {
      if (!SetThreadingBackend(b).ok()) continue;  // no OpenMP
      EXPECT_TRUE(same(serial, packed_with(&parallel_fill, threads)))
          << threads << " threads, backend " << static_cast<int>(b);
    }
    (void)SetThreadingBackend(ThreadingBackend::kPool);
  }
}

struct Shape {
  int64_t n, k, group;
  WeightType type;
  bool bias;
};

// Partial last blocks, per-channel and grouped, both weight types.
const Shape kShapes[] = {{40, 256, 64, WeightType::kS4, true},
                         {200, 128, 32, WeightType::kU4, false},
                         {1024, 64, -1, WeightType::kU4, true},
                         {24, 96, 32, WeightType::kS4, false}};

CanonicalWeights Weights(const Shape& s, Mode mode) {
  const LayerDesc desc = testing::KernelTestDesc(
      mode, s.n, s.k, s.group, s.type, DType::kBF16, DType::kBF16, s.bias);
  return testing::RandomWeights(desc, 7);
}

bool SameDa8w4(const internal::Da8w4Packed& a, const internal::Da8w4Packed& b) {
  return SameBytes(a.weights, b.weights) && SameBytes(a.scales, b.scales) &&
         SameBytes(a.zeros, b.zeros) && SameBytes(a.bias, b.bias);
}

bool SameW4a16(const internal::W4a16Packed& a, const internal::W4a16Packed& b) {
  return SameBytes(a.weights, b.weights) && SameBytes(a.meta, b.meta) &&
         SameBytes(a.bias, b.bias);
}

TEST(FirstTouchPack, Da8w4SerialAndParallelBytesEqual) {
  for (const Shape& s : kShapes) {
    const CanonicalWeights w = Weights(s, Mode::kDA8W4);
    for (int lanes : {8, 16}) {
      const internal::Da8w4Layout layout = internal::MakeDa8w4Layout(w, lanes);
      for (int64_t align : {1, 2, 3}) {
        SCOPED_TRACE(::testing::Message()
                     << "n=" << s.n << " k=" << s.k << " lanes=" << lanes
                     << " align=" << align);
        ExpectSerialEqualsParallel<internal::Da8w4Packed>(
            [&] { return internal::PackDa8w4(w, layout, align); }, &SameDa8w4);
      }
    }
  }
}

TEST(FirstTouchPack, W4a16SerialAndParallelBytesEqual) {
  for (const Shape& s : kShapes) {
    const CanonicalWeights w = Weights(s, Mode::kW4A16);
    for (internal::Flavor flavor :
         {internal::Flavor::kF32Fma, internal::Flavor::kBf16Dot}) {
      for (int lanes : {8, 16}) {
        internal::W4a16Layout layout;
        layout.flavor = flavor;
        layout.lanes = lanes;
        layout.nv = 2;
        layout.n = w.n;
        layout.k = w.k;
        layout.group_size = w.group_size;
        layout.asymmetric = w.asymmetric;
        SCOPED_TRACE(::testing::Message()
                     << "n=" << s.n << " k=" << s.k << " lanes=" << lanes
                     << " flavor=" << static_cast<int>(flavor));
        ExpectSerialEqualsParallel<internal::W4a16Packed>(
            [&] { return internal::PackW4a16Weights(w, layout); }, &SameW4a16);
      }
    }
  }
}

// The pool hands chunk c to thread c (the caller is thread 0) whenever
// every thread is there to take its own: the thread that packed a share of
// the weights is the one that reads it at M = 1.
TEST(FirstTouchPack, PoolRunsChunkOnItsOwnerThread) {
  (void)SetThreadingBackend(ThreadingBackend::kPool);
  constexpr int kThreads = 3;
  SetNumThreads(kThreads);
  auto owners = [] {
    std::vector<std::thread::id> who(kThreads);
    std::atomic<int> started{0};
    internal::ParallelRun(kThreads, [&](int c) {
      started.fetch_add(1);
      while (started.load() < kThreads) std::this_thread::yield();
      who[c] = std::this_thread::get_id();
    });
    return who;
  };
  const std::vector<std::thread::id> first = owners();
  EXPECT_EQ(first[0], std::this_thread::get_id());
  for (int rep = 0; rep < 5; ++rep) EXPECT_EQ(owners(), first);
  SetNumThreads(0);
}

}  // namespace
}  // namespace w4jit
