// The public Layer API end to end: every checkpoint format in, correct
// results out, whichever kernel the dispatcher picks; kernel names, packed
// sizes, threading and logging.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/formats/import.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

namespace w4jit {
namespace {

using testing::kAllFormats;
using testing::MakeLayer;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunAndCheck;
using testing::RunToF32;

LayerDesc SmallDesc(Mode mode, WeightType type) {
  LayerDesc d;
  d.n = 24;
  d.k = 96;
  d.group_size = 32;
  d.weight_type = type;
  d.mode = mode;
  d.scale_dtype = DType::kF16;
  d.act_dtype = DType::kBF16;
  d.out_dtype = DType::kF32;
  d.has_bias = true;
  return d;
}

TEST(LayerApi, EveryFormatEndToEnd) {
  for (WeightFormat format : kAllFormats) {
    for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
      for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
        for (bool force : {false, true}) {
          const LayerDesc desc = SmallDesc(mode, type);
          SCOPED_TRACE(testing::Describe(desc) + " format " + ToString(format) +
                       (force ? " forced" : ""));
          const auto w = RandomWeights(desc, 7);
          auto ckpt = internal::ExportWeights(desc, w, format);
          ASSERT_TRUE(ckpt.ok()) << ckpt.status();
          LayerOptions opt;
          opt.force_reference = force;
          auto layer = Layer::Create(desc, ckpt->view(), opt);
          ASSERT_TRUE(layer.ok()) << layer.status();
          const int64_t m = 3, ldx = desc.k + 5, ldy = desc.n + 3;
          const auto x = RandomActivations(desc, m, ldx, 11);
          EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy));
        }
      }
    }
  }
}

TEST(LayerApi, ForcedReferenceIsNamedAndHoldsBytes) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    const LayerDesc desc = SmallDesc(mode, WeightType::kU4);
    LayerOptions opt;
    opt.force_reference = true;
    auto layer = MakeLayer(desc, RandomWeights(desc, 1), opt);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const std::vector<std::string> names = (*layer)->kernel_names();
    ASSERT_EQ(names.size(), 1u);
    const std::string want =
        mode == Mode::kDA8W4 ? "reference_da8w4 (" : "reference_w4a16 (";
    EXPECT_EQ(names[0].rfind(want, 0), 0u) << names[0];
    EXPECT_NE(names[0].find("forced"), std::string::npos) << names[0];
    // At least the nibbles, one per byte or two per byte.
    EXPECT_GE((*layer)->packed_bytes(),
              static_cast<size_t>(desc.n * desc.k / 2));
  }
}

TEST(LayerApi, DefaultLayerHasNamesAndBytes) {
  const LayerDesc desc = SmallDesc(Mode::kDA8W4, WeightType::kS4);
  auto layer = MakeLayer(desc, RandomWeights(desc, 1));
  ASSERT_TRUE(layer.ok()) << layer.status();
  EXPECT_GT((*layer)->packed_bytes(), 0u);
  ASSERT_FALSE((*layer)->kernel_names().empty());
  for (const std::string& name : (*layer)->kernel_names()) {
    EXPECT_FALSE(name.empty());
  }
}

TEST(LayerApi, ConcurrentRunsAgreeWithSerialRuns) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    LayerDesc desc = SmallDesc(mode, WeightType::kU4);
    desc.n = 200;
    const auto w = RandomWeights(desc, 3);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    constexpr int kThreads = 4;
    const int64_t m = 5;
    std::vector<std::vector<uint8_t>> xs;
    std::vector<std::vector<float>> serial;
    for (int t = 0; t < kThreads; ++t) {
      xs.push_back(RandomActivations(desc, m, desc.k, 100 + t));
      auto y = RunToF32(**layer, m, xs.back(), desc.k);
      ASSERT_TRUE(y.ok()) << y.status();
      serial.push_back(*y);
    }
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int rep = 0; rep < 20; ++rep) {
          auto y = RunToF32(**layer, m, xs[t], desc.k);
          if (!y.ok() || *y != serial[t]) ++mismatches;
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
  }
}

TEST(LayerApi, ResultsDoNotDependOnThreadCount) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    LayerDesc desc = SmallDesc(mode, WeightType::kS4);
    desc.n = 136;
    const auto w = RandomWeights(desc, 5);
    auto layer = MakeLayer(desc, w);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const int64_t m = 7;
    const auto x = RandomActivations(desc, m, desc.k, 6);
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 3}) {
      SetNumThreads(threads);
      EXPECT_EQ(GetNumThreads(), threads);
      auto y = RunToF32(**layer, m, x, desc.k);
      ASSERT_TRUE(y.ok()) << y.status();
      results.push_back(*y);
    }
    SetNumThreads(0);
    EXPECT_EQ(results[0], results[1]);
    EXPECT_EQ(results[0], results[2]);
  }
}

// Runs chunks serially on the calling thread and counts them.
class CountingBackend final : public ParallelBackend {
 public:
  int concurrency() const override { return 3; }
  void Run(int num_chunks, const std::function<void(int)>& fn) override {
    runs_.fetch_add(1);
    for (int i = num_chunks - 1; i >= 0; --i) fn(i);  // any order is valid
  }
  int runs() const { return runs_.load(); }

 private:
  std::atomic<int> runs_{0};
};

TEST(LayerApi, HostParallelBackendIsUsed) {
  const LayerDesc desc = SmallDesc(Mode::kDA8W4, WeightType::kU4);
  const auto w = RandomWeights(desc, 9);
  auto layer = MakeLayer(desc, w);
  ASSERT_TRUE(layer.ok()) << layer.status();
  auto backend = std::make_shared<CountingBackend>();
  SetParallelBackend(backend);
  EXPECT_EQ(GetNumThreads(), 3);
  const int64_t m = 16;
  const auto x = RandomActivations(desc, m, desc.k, 10);
  EXPECT_TRUE(RunAndCheck(**layer, w, m, x, desc.k, desc.n));
  SetParallelBackend(nullptr);
  EXPECT_GT(backend->runs(), 0);
}

TEST(LayerApi, LogHookReceivesMessages) {
  std::mutex mu;
  std::vector<std::string> messages;
  SetLogHook([&](LogLevel, std::string_view m) {
    std::lock_guard<std::mutex> lock(mu);
    messages.emplace_back(m);
  });
  const LayerDesc desc = SmallDesc(Mode::kW4A16, WeightType::kS4);
  LayerOptions opt;
  opt.force_reference = true;
  auto layer = MakeLayer(desc, RandomWeights(desc, 1), opt);
  SetLogHook(nullptr);
  ASSERT_TRUE(layer.ok()) << layer.status();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_FALSE(messages.empty());
  bool mentions_reference = false;
  for (const auto& m : messages) {
    mentions_reference |= m.find("reference") != std::string::npos;
  }
  EXPECT_TRUE(mentions_reference) << messages[0];
}

}  // namespace
}  // namespace w4jit
