// Options for streaming weights from DRAM: the int4 kernels' software
// prefetch distance (a tuning parameter of both modes) and 2 MB pages for
// a layer's buffers. Neither may change a result; prefetch 0 emits no
// prefetch code and keeps the kernel names of before.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/memory.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "gtest/gtest.h"
#include "jit/emit_util.h"
#include "runtime/da8w4/da8w4_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/tuning.hpp"

namespace w4jit::testing {
namespace {

using internal::IsaTier;

// Installs a tuning file giving `desc`'s shape prefetch_distance = d.
void InstallPrefetch(const LayerDesc& desc, int64_t d) {
  internal::TuningFile file;
  file.cpu_class =
      internal::CpuClassOf(internal::HostCpu(), internal::ActiveIsa());
  file.entries.push_back(
      {desc.mode, desc.n, desc.k, desc.group_size, {{"prefetch_distance", d}}});
  // One file per process: ctest -j runs the tiers' processes side by side.
  const std::string path = ::testing::TempDir() + "/prefetch_tuning_" +
                           std::to_string(getpid()) + ".json";
  std::ofstream(path) << internal::TuningToJson(file);
  const absl::Status loaded = LoadTuningFile(path);
  // Parsed when loaded: nothing is left behind in the temp folder.
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded;
}

class StreamOptionsTest : public ::testing::TestWithParam<IsaTier> {
 protected:
  void TearDown() override { ASSERT_TRUE(LoadTuningFile("").ok()); }
};

TEST_P(StreamOptionsTest, PrefetchDistanceKeepsResults) {
  const IsaTier tier = GetParam();
  if (!testing::StartIsaRun(tier)) GTEST_SKIP() << WhyCannotRunTier(tier);
  internal::ScopedIsaCap cap(tier);
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
      for (int64_t d : {0, 64, 512, 4096}) {
        const LayerDesc desc = KernelTestDesc(mode, 200, 512, 128, wt,
                                              DType::kBF16, DType::kBF16, true);
        InstallPrefetch(desc, d);
        const auto w = RandomWeights(desc, 7);
        auto layer = MakeLayer(desc, w);
        ASSERT_TRUE(layer.ok()) << layer.status();
        bool any_prefetching = false;
        for (const std::string& name : (*layer)->kernel_names()) {
          const bool pf =
              name.find(absl::StrCat("_pf", d, "__")) != std::string::npos;
          any_prefetching = any_prefetching || pf;
          if (d == 0) {
            EXPECT_EQ(name.find("_pf"), std::string::npos) << name;
          }
        }
        if (d > 0) {
          EXPECT_TRUE(any_prefetching) << ToString(mode) << " d=" << d;
        }
        for (int64_t m : {1, 3, 9, 17}) {
          const int64_t ldx = desc.k + 8, ldy = desc.n + 4;
          const auto x = RandomActivations(desc, m, ldx, 11 + m);
          EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy))
              << ToString(mode) << " " << ToString(wt) << " d=" << d
              << " M=" << m;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tiers, StreamOptionsTest,
                         ::testing::ValuesIn(testing::IsaTiers()),
                         testing::IsaTierName);

TEST(StreamOptions, PrefetchDistanceIsChecked) {
  EXPECT_TRUE(internal::CheckPrefetchDistance(0).ok());
  EXPECT_TRUE(internal::CheckPrefetchDistance(1024).ok());
  for (int bad : {-64, 100, internal::kMaxPrefetchDistance + 64}) {
    const absl::Status s = internal::CheckPrefetchDistance(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find(absl::StrCat(bad)), std::string::npos);
  }
  EXPECT_FALSE(internal::ApplyDa8w4Params({{"prefetch_distance", 100}},
                                          internal::Da8w4Params{},
                                          IsaTier::kAvx2)
                   .ok());
  EXPECT_TRUE(internal::ApplyDa8w4Params({{"prefetch_distance", 256}},
                                         internal::Da8w4Params{},
                                         IsaTier::kAvx2)
                  .ok());
}

TEST(StreamOptions, HugePagesAreAskedForLargeBuffersOnly) {
  EXPECT_FALSE(internal::HugePagesRequested() &&
               std::getenv("W4JIT_HUGEPAGES") == nullptr);
  {
    internal::ScopedHugePages huge(true);
    EXPECT_TRUE(internal::HugePagesRequested());
    void* big = internal::AlignedAllocate(3 << 20, 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(big) % internal::kHugePageBytes, 0u);
    internal::AlignedFree(big, 3 << 20);
    void* small = internal::AlignedAllocate(4096, 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
    internal::AlignedFree(small, 4096);
  }
  const std::string mode = internal::TransparentHugePagesMode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" ||
              mode == "unavailable")
      << mode;
}

TEST(StreamOptions, HugePagesLayerComputesTheSame) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    // 4 MB of packed weights: on 2 MB pages where the OS grants them.
    const LayerDesc desc =
        KernelTestDesc(mode, 2048, 4096, 128, WeightType::kS4, DType::kBF16,
                       DType::kBF16, false);
    const auto w = RandomWeights(desc, 3);
    LayerOptions options;
    options.huge_pages = true;
    auto layer = MakeLayer(desc, w, options);
    ASSERT_TRUE(layer.ok()) << layer.status();
    for (int64_t m : {1, 5}) {
      const auto x = RandomActivations(desc, m, desc.k, 5 + m);
      EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n))
          << ToString(mode) << " M=" << m;
    }
  }
}

}  // namespace
}  // namespace w4jit::testing
