// The process-wide kernel cache: one generation per key however many
// threads ask, failures cached, names unique per key, a capacity that
// evicts the least recently used kernel while its holders keep it; and the
// W^X rule: no JIT page is ever mapped writable and executable at once.
#include "runtime/kernel_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "jit/generator.h"
#include "tests/util/test_layer.h"
#include "w4jit/kernel_cache.hpp"
#include "w4jit/layer.hpp"

namespace w4jit::internal {
namespace {

// Returns its constant: the smallest kernel that proves code ran.
class ConstantGenerator : public Generator {
 public:
  explicit ConstantGenerator(int value)
      : Generator("test_constant_" + std::to_string(value), 4096),
        value_(value) {}

 protected:
  void Generate() override {
    Preamble();
    mov(eax, value_);
    Postamble();
  }

 private:
  int value_;
};

class BrokenGenerator : public Generator {
 public:
  BrokenGenerator() : Generator("test_broken", 4096) {}

 protected:
  void Generate() override {
    Xbyak::Label never_defined;
    jmp(never_defined);
    ret();
  }
};

// A config no layer asks for: its stride keeps it apart from real kernels.
KernelConfig TestKey(int64_t n) {
  W4a16PanelConfig config;
  config.n = n;
  config.mr = 1;
  config.nr = 16;
  config.stride = 0xCAC4E;
  return config;
}

TEST(KernelCacheTest, ConcurrentRequestsGenerateOnce) {
  std::atomic<int> factory_calls{0};
  const KernelConfig key = TestKey(1001);
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<const Generator>> got(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto k = GetOrCreateKernel(key, [&] {
          factory_calls.fetch_add(1);
          return std::make_unique<ConstantGenerator>(41);
        });
        ASSERT_TRUE(k.ok()) << k.status();
        got[t] = *k;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(factory_calls.load(), 1);
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  EXPECT_EQ(got[0]->entry<int (*)()>()(), 41);
}

TEST(KernelCacheTest, DistinctKeysGetDistinctKernels) {
  auto a = GetOrCreateKernel(
      TestKey(2001), [] { return std::make_unique<ConstantGenerator>(1); });
  auto b = GetOrCreateKernel(
      TestKey(2002), [] { return std::make_unique<ConstantGenerator>(2); });
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_EQ((*a)->entry<int (*)()>()(), 1);
  EXPECT_EQ((*b)->entry<int (*)()>()(), 2);
}

TEST(KernelCacheTest, FailedGenerationIsReportedAndCached) {
  int calls = 0;
  auto factory = [&] {
    ++calls;
    return std::make_unique<BrokenGenerator>();
  };
  auto first = GetOrCreateKernel(TestKey(3001), factory);
  auto second = GetOrCreateKernel(TestKey(3001), factory);
  EXPECT_FALSE(first.ok());
  EXPECT_FALSE(second.ok());
  EXPECT_EQ(calls, 1);
  EXPECT_NE(first.status().message().find("undefined label"), std::string::npos)
      << first.status();
}

// Sets the cache's capacity for one test and restores it after.
class ScopedCacheCapacity {
 public:
  explicit ScopedCacheCapacity(int64_t capacity)
      : before_(GetKernelCacheCapacity()) {
    EXPECT_TRUE(SetKernelCacheCapacity(capacity).ok());
  }
  ~ScopedCacheCapacity() { EXPECT_TRUE(SetKernelCacheCapacity(before_).ok()); }

 private:
  int64_t before_;
};

TEST(KernelCacheTest, CapacityEvictsTheLeastRecentlyUsedAndHoldersKeepIt) {
  EXPECT_GE(GetKernelCacheCapacity(), 1);
  EXPECT_FALSE(SetKernelCacheCapacity(0).ok());
  ScopedCacheCapacity capacity(2);
  int calls = 0;
  auto get = [&](int v) {
    return GetOrCreateKernel(TestKey(7000 + v), [&calls, v] {
      ++calls;
      return std::make_unique<ConstantGenerator>(v);
    });
  };
  auto a = get(1);
  auto b = get(2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE(get(1).ok());  // a is now the most recent: b goes first
  const KernelCacheStats before = GetKernelCacheStats();
  auto c = get(3);
  ASSERT_TRUE(c.ok());
  const KernelCacheStats after = GetKernelCacheStats();
  EXPECT_EQ(after.capacity, 2);
  EXPECT_EQ(after.entries, 2);
  EXPECT_EQ(after.evictions, before.evictions + 1);
  EXPECT_EQ(calls, 3);
  // The evicted kernel still runs for whoever holds it...
  EXPECT_EQ((*b)->entry<int (*)()>()(), 2);
  // ...and a is still cached, b generated again on request.
  auto a2 = get(1);
  ASSERT_TRUE(a2.ok());
  EXPECT_EQ(*a2, *a);
  EXPECT_EQ(calls, 3);
  auto b2 = get(2);
  ASSERT_TRUE(b2.ok());
  EXPECT_NE(*b2, *b);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ((*b2)->entry<int (*)()>()(), 2);
}

// Layers hold their kernels: a cache far smaller than the kernels of the
// live layers evicts all the time, and every layer still runs correctly
// (under ASan this also proves no layer runs freed code).
TEST(KernelCacheTest, OverfilledCacheStillRunsItsLayers) {
  ScopedCacheCapacity capacity(1);
  struct Live {
    internal::CanonicalWeights w;
    std::unique_ptr<Layer> layer;
  };
  std::vector<Live> live;
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (int64_t n : {24, 40, 56}) {
      const LayerDesc desc =
          testing::KernelTestDesc(mode, n, 128, 32, WeightType::kS4,
                                  DType::kBF16, DType::kF32, n == 40);
      Live l;
      l.w = testing::RandomWeights(desc, static_cast<uint32_t>(n));
      auto layer = testing::MakeLayer(desc, l.w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      l.layer = std::move(*layer);
      live.push_back(std::move(l));
    }
  }
  const KernelCacheStats stats = GetKernelCacheStats();
  EXPECT_LE(stats.entries, 1);
  // Generate more, so that nothing the layers use is cached any more.
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(GetOrCreateKernel(TestKey(8000 + i), [i] {
                  return std::make_unique<ConstantGenerator>(i);
                }).ok());
  }
  for (const Live& l : live) {
    const LayerDesc& desc = l.layer->desc();
    SCOPED_TRACE(testing::Describe(desc));
    for (int64_t m : {1, 5, 40}) {
      const auto x = testing::RandomActivations(desc, m, desc.k, 3);
      EXPECT_TRUE(testing::RunAndCheck(*l.layer, l.w, m, x, desc.k, desc.n));
    }
  }
}

TEST(KernelNameTest, NameIsReadableAndUniquePerField) {
  KernelName key;
  key.group_size = 128;
  key.n = 4096;
  key.k = 4096;
  key.isa = IsaTier::kAvx512Vnni;
  key.mr = 4;
  key.nr = 32;
  EXPECT_EQ(key.str(), "da8w4_s4_g128_n4096_k4096_m4x32_bf16tof32__avx512vnni");

  std::set<std::string> names;
  std::vector<KernelName> keys;
  for (int i = 0; i < 9; ++i) keys.push_back(key);
  keys[1].weight_type = WeightType::kU4;
  keys[2].per_channel = true;
  keys[3].out_dtype = DType::kBF16;
  keys[4].bias = true;
  keys[5].isa = IsaTier::kAvx2;
  keys[6].mr = 1;
  keys[7].family = KernelFamily::kW4a16Gemm;
  keys[8].flavor = Flavor::kBf16Dot;
  for (const auto& k : keys) names.insert(k.str());
  EXPECT_EQ(names.size(), keys.size());
}

// W4JIT_DUMP_DIR and W4JIT_PERF_MAP make kernels visible to objdump and
// perf; both are read at each generation.
TEST(KernelCacheTest, DumpDirAndPerfMapNameTheKernel) {
  const std::string dir = ::testing::TempDir() + "/w4jit_dump";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  setenv("W4JIT_DUMP_DIR", dir.c_str(), 1);
  setenv("W4JIT_PERF_MAP", "1", 1);
  auto k = GetOrCreateKernel(
      TestKey(6001), [] { return std::make_unique<ConstantGenerator>(6001); });
  unsetenv("W4JIT_DUMP_DIR");
  unsetenv("W4JIT_PERF_MAP");
  ASSERT_TRUE(k.ok()) << k.status();
  std::ifstream dump(dir + "/" + (*k)->name() + ".bin", std::ios::binary);
  ASSERT_TRUE(dump.good());
  std::string bytes((std::istreambuf_iterator<char>(dump)),
                    std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.size(), (*k)->getSize());
  std::ifstream map("/tmp/perf-" + std::to_string(getpid()) + ".map");
  std::string text((std::istreambuf_iterator<char>(map)),
                   std::istreambuf_iterator<char>());
  EXPECT_NE(text.find((*k)->name()), std::string::npos);
}

// Scans /proc/self/maps for a mapping with both w and x permissions.
std::vector<std::string> WritableExecutableMappings() {
  std::vector<std::string> bad;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // Format: "start-end perms offset dev inode path"; perms like "r-xp".
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.size() < space + 5) continue;
    const std::string perms = line.substr(space + 1, 4);
    if (perms[1] == 'w' && perms[2] == 'x') bad.push_back(line);
  }
  return bad;
}

// Permissions of the mapping that holds `addr` ("" if none).
std::string PermissionsAt(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s", &lo, &hi, perms) == 3 &&
        a >= lo && a < hi) {
      return perms;
    }
  }
  return "";
}

// JITs test kernels and real DA8W4 and W4A16 layers (where the CPU has a
// JIT ISA), so that every generator of the library has run.
void JitManyKernels() {
  for (int i = 0; i < 64; ++i) {
    auto k = GetOrCreateKernel(TestKey(5000 + i), [i] {
      return std::make_unique<ConstantGenerator>(i);
    });
    if (!k.ok() || (*k)->entry<int (*)()>()() != i) std::_Exit(2);
  }
  for (Mode mode : {Mode::kDA8W4, Mode::kW4A16}) {
    LayerDesc d;
    d.n = 40;
    d.k = 256;
    d.group_size = 64;
    d.mode = mode;
    std::vector<int8_t> q(d.n * d.k, 1);
    std::vector<float> s(d.n * d.groups(), 0.5f);
    WeightsView w;
    w.qweight = q.data();
    w.scales = s.data();
    auto layer = Layer::Create(d, w);
    if (!layer.ok()) std::_Exit(3);
    std::vector<uint16_t> x(3 * d.k, 0x3F80), y(3 * d.n);
    if (!(*layer)->Run(3, x.data(), d.k, y.data(), d.n).ok()) std::_Exit(4);
  }
}

TEST(WxTest, NoJitKernelLivesInAWritablePage) {
  JitManyKernels();
  const std::vector<KernelInfo> kernels = ListKernels();
  ASSERT_GE(kernels.size(), 64u);
  for (const KernelInfo& k : kernels) {
    const std::string perms = PermissionsAt(k.code);
    EXPECT_EQ(perms.substr(0, 3), "r-x")
        << k.name << " is in a " << perms << " mapping";
  }
}

// In a fresh process (only this test's code has run: no peer library that
// maps its own JIT code), no mapping at all is writable and executable.
TEST(WxTest, NoMappingIsWritableAndExecutable) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        JitManyKernels();
        std::_Exit(WritableExecutableMappings().empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace w4jit::internal
