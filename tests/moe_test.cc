// MoeLayer against the float64 oracle (check/moe_check.h): both modes on
// the reference and every JIT tier this CPU runs (through the ISA cap),
// per-expert and stacked checkpoints of several formats, T = 1..300 with
// tails, k = 1, 2, 8, skewed routing (one expert in every token), experts
// without tokens, repeated experts in a token, accumulate and unweighted
// runs; bit-identical results across thread counts and backends; bad
// input errors that leave y untouched; routing tensors against guard
// pages.
#include "w4jit/moe.hpp"

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/memory.h"
#include "base/numeric.h"
#include "check/layer_check.h"
#include "check/moe_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "dispatch/kernel_key.h"
#include "gtest/gtest.h"
#include "runtime/moe/moe_experts.h"
#include "runtime/threads/omp_backend.h"
#include "tests/util/guard_pages.h"
#include "tests/util/isa.h"
#include "w4jit/parallel.hpp"

namespace w4jit::testing {
namespace {

using internal::IsaTier;

enum class Routes { kUniform, kSkewed, kFewExperts, kRepeated };

// Token i's k expert ids: distinct random ids (kUniform); expert 0 first in
// every token (kSkewed); only experts 1 and 3 (kFewExperts, k <= 2); and
// random ids with repeats (kRepeated).
std::vector<int32_t> RandomRouting(int64_t t, int64_t k, int64_t experts,
                                   Routes routes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> ids(static_cast<size_t>(t * k));
  std::vector<int32_t> all(static_cast<size_t>(experts));
  for (int64_t e = 0; e < experts; ++e) all[e] = static_cast<int32_t>(e);
  for (int64_t i = 0; i < t; ++i) {
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t j = 0; j < k; ++j) {
      int32_t id = all[j];
      if (routes == Routes::kSkewed) {
        id = j == 0 ? 0 : (all[j] == 0 ? all[0] : all[j]);
      } else if (routes == Routes::kFewExperts) {
        id = j == 0 ? 1 : 3;
      } else if (routes == Routes::kRepeated) {
        id = static_cast<int32_t>(rng() % experts);
      }
      ids[i * k + j] = id;
    }
  }
  return ids;
}

std::vector<float> RandomRouteWeights(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n));
  for (float& v : w) v = d(rng);
  return w;
}

struct Fixture {
  MoeDesc desc;
  check::MoeCheckpoint ckpt;
  std::unique_ptr<MoeLayer> layer;
};

// desc's layer from a random checkpoint in `format`, stacked or not, with
// kernels for `tier` (kRef: the reference kernels).
std::unique_ptr<Fixture> MakeFixture(const MoeDesc& desc, WeightFormat format,
                                     bool stacked, IsaTier tier,
                                     uint32_t seed) {
  auto f = std::make_unique<Fixture>();
  f->desc = desc;
  auto c = check::RandomMoeCheckpoint(desc, format, seed);
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return nullptr;
  f->ckpt = *std::move(c);
  internal::ScopedIsaCap cap(tier == IsaTier::kRef ? IsaTier::kAvx2 : tier);
  MoeOptions options;
  options.force_reference = tier == IsaTier::kRef;
  auto layer = MoeLayer::Create(
      desc, stacked ? f->ckpt.Stacked() : f->ckpt.PerExpert(), options);
  EXPECT_TRUE(layer.ok()) << layer.status();
  if (!layer.ok()) return nullptr;
  f->layer = *std::move(layer);
  return f;
}

// Runs t tokens with k experts each and compares with the oracle; y has
// padding columns that must keep their sentinel.
::testing::AssertionResult RunAndCheck(const Fixture& f, int64_t t, int64_t k,
                                       Routes routes, bool accumulate,
                                       bool unweighted, uint32_t seed) {
  const MoeDesc& d = f.desc;
  const int64_t ldx = d.hidden + 3, ldy = d.hidden + 5;
  const LayerDesc d13 = internal::MoeW13Desc(d);
  const std::vector<uint8_t> x = check::RandomActivations(d13, t, ldx, seed);
  const std::vector<int32_t> ids =
      RandomRouting(t, k, d.experts, routes, seed + 1);
  const std::vector<float> w = RandomRouteWeights(t * k, seed + 2);
  LayerDesc dy = d13;
  dy.act_dtype = d.out_dtype;
  std::vector<uint8_t> y = check::RandomActivations(dy, t, ldy, seed + 3);
  const std::vector<uint8_t> y_before = y;
  const float* wp = unweighted ? nullptr : w.data();
  MoeRunOptions opt;
  opt.accumulate = accumulate;
  opt.unweighted = unweighted;
  absl::Status s =
      f.layer->Run(t, x.data(), ldx, ids.data(), wp, k, y.data(), ldy, opt);
  if (!s.ok()) return ::testing::AssertionFailure() << s;
  const check::MoeExpected want =
      check::MoeOracle(d, f.ckpt, t, x.data(), ldx, ids.data(), wp, k,
                       y_before.data(), ldy, accumulate);
  const std::string bad = check::CompareMoe(d, want, t, y.data(), ldy);
  const size_t es = internal::DTypeSize(d.out_dtype);
  for (int64_t i = 0; i < t; ++i) {
    const size_t pad = (i * ldy + d.hidden) * es;
    if (std::memcmp(y.data() + pad, y_before.data() + pad,
                    (ldy - d.hidden) * es) != 0) {
      return ::testing::AssertionFailure()
             << "padding of row " << i << " written";
    }
  }
  if (!bad.empty()) {
    return ::testing::AssertionFailure()
           << "t=" << t << " k=" << k << " routes=" << static_cast<int>(routes)
           << ": " << bad;
  }
  return ::testing::AssertionSuccess();
}

struct Case {
  Mode mode;
  IsaTier tier;
};

class MoeTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(GetParam().tier)) {
      GTEST_SKIP() << WhyCannotRunTier(GetParam().tier);
    }
  }
  MoeDesc SmallDesc() const {
    MoeDesc d;
    d.experts = 10;
    d.hidden = 128;
    d.intermediate = 96;
    d.group_size = 32;
    d.mode = GetParam().mode;
    return d;
  }
  // Every kernel is the tier's (or the reference).
  void ExpectTier(const MoeLayer& layer) const {
    for (const std::string& n : layer.kernel_names()) {
      if (GetParam().tier == IsaTier::kRef) {
        EXPECT_EQ(n.rfind("reference", 0), 0u) << n;
      } else {
        // A JIT kernel of this tier or one below it (a kernel is named by
        // the least tier its code needs).
        const size_t sep = n.rfind("__");
        ASSERT_NE(sep, std::string::npos) << n;
        bool ok = false;
        for (const internal::IsaTraits& t : internal::kIsaTraits) {
          ok = ok || (t.vector_bytes > 0 &&
                      internal::HasFeaturesOf(GetParam().tier, t.tier) &&
                      n.substr(sep + 2) == t.suffix);
        }
        EXPECT_TRUE(ok) << n;
      }
    }
    // One routed row runs the vector kernels of the mode (or the
    // reference): Layer::compute_at's answer, asked of the experts.
    const LayerCompute c = layer.compute_at(1);
    if (GetParam().tier == IsaTier::kRef) {
      EXPECT_EQ(c.op, ComputeOp::kScalar);
    } else if (GetParam().mode == Mode::kDA8W4) {
      EXPECT_EQ(c.op, ComputeOp::kInt8Dot);
    } else {
      EXPECT_TRUE(c.op == ComputeOp::kF32Fma || c.op == ComputeOp::kBf16Dot)
          << ToString(c.op);
    }
  }
};

TEST_P(MoeTest, FormatsDtypesActivationsAndTokenCounts) {
  struct Variant {
    WeightFormat format;
    bool stacked;
    WeightType wt;
    DType act, out;
    Activation activation;
    bool bias;
  };
  const Variant variants[] = {
      {WeightFormat::kCompressedTensors, true, WeightType::kS4, DType::kBF16,
       DType::kBF16, Activation::kSilu, false},
      {WeightFormat::kCompressedTensors, false, WeightType::kU4, DType::kF32,
       DType::kF32, Activation::kGeluTanh, true},
      {WeightFormat::kZentorchInt32, true, WeightType::kS4, DType::kF32,
       DType::kBF16, Activation::kGeluErf, false},
      {WeightFormat::kGptqV1, false, WeightType::kU4, DType::kBF16, DType::kF32,
       Activation::kSilu, true},
      // gpt-oss's experts as vLLM hands them to zentorch: interleaved w13
      // rows, biases.
      {WeightFormat::kZentorchInt32, true, WeightType::kS4, DType::kBF16,
       DType::kBF16, Activation::kSwigluOai, true},
      {WeightFormat::kCompressedTensors, false, WeightType::kU4, DType::kF32,
       DType::kF32, Activation::kSwigluOai, false},
  };
  uint32_t seed = 100;
  for (const Variant& v : variants) {
    MoeDesc d = SmallDesc();
    d.weight_type = v.wt;
    d.act_dtype = v.act;
    d.out_dtype = v.out;
    d.activation = v.activation;
    d.has_w13_bias = d.has_w2_bias = v.bias;
    SCOPED_TRACE(absl::StrCat("format ", ToString(v.format), " stacked ",
                              v.stacked, " ", ToString(v.wt), " act ",
                              ToString(v.act), " out ", ToString(v.out), " ",
                              ToString(v.activation)));
    auto f = MakeFixture(d, v.format, v.stacked, GetParam().tier, seed++);
    ASSERT_NE(f, nullptr);
    ExpectTier(*f->layer);
    for (int64_t t : {1, 2, 3, 5, 16, 17, 33}) {
      for (int64_t k : {1, 2, 8}) {
        EXPECT_TRUE(
            RunAndCheck(*f, t, k, Routes::kUniform, false, false, seed++));
      }
    }
  }
}

// swigluoai with other constants than gpt-oss's: a limit inside the range
// of the gate and up values (both clamps act) and a negative alpha; bf16
// biases. A bad limit or alpha is refused, naming it.
TEST_P(MoeTest, SwigluOaiConstantsAndClamps) {
  MoeDesc d = SmallDesc();
  d.activation = Activation::kSwigluOai;
  d.has_w13_bias = d.has_w2_bias = true;
  d.bias_dtype = DType::kBF16;
  uint32_t seed = 900;
  for (const auto& [alpha, limit] :
       {std::pair{1.702f, 7.0f}, {0.75f, 0.25f}, {-2.0f, 0.5f}}) {
    d.swiglu_alpha = alpha;
    d.swiglu_limit = limit;
    SCOPED_TRACE(absl::StrCat("alpha ", alpha, " limit ", limit));
    auto f = MakeFixture(d, WeightFormat::kZentorchInt32, true, GetParam().tier,
                         seed++);
    ASSERT_NE(f, nullptr);
    ExpectTier(*f->layer);
    for (int64_t t : {1, 4, 17}) {
      EXPECT_TRUE(
          RunAndCheck(*f, t, 3, Routes::kUniform, false, false, seed++));
    }
  }
  auto c = check::RandomMoeCheckpoint(d, WeightFormat::kZentorchInt32, 1);
  ASSERT_TRUE(c.ok());
  for (const auto& [alpha, limit, needle] :
       {std::tuple{1.702f, 0.0f, "swiglu_limit = 0"},
        {1.702f, -1.0f, "swiglu_limit = -1"},
        {NAN, 7.0f, "swiglu_alpha = nan"},
        {1.702f, INFINITY, "swiglu_limit = inf"}}) {
    d.swiglu_alpha = alpha;
    d.swiglu_limit = limit;
    auto layer = MoeLayer::Create(d, c->Stacked());
    ASSERT_FALSE(layer.ok()) << needle;
    EXPECT_NE(layer.status().message().find(needle), std::string::npos)
        << layer.status();
  }
}

TEST_P(MoeTest, ManyTokensSkewedAndSparseRouting) {
  MoeDesc d = SmallDesc();
  d.act_dtype = DType::kF32;
  d.out_dtype = DType::kF32;
  auto f = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                       GetParam().tier, 7);
  ASSERT_NE(f, nullptr);
  // 300 tokens: every expert past one 128-row item; skewed: expert 0
  // takes all 300 rows (three items).
  for (int64_t t : {63, 129, 300}) {
    EXPECT_TRUE(RunAndCheck(*f, t, 8, Routes::kUniform, false, false, 11));
    EXPECT_TRUE(RunAndCheck(*f, t, 2, Routes::kSkewed, false, false, 12));
  }
  // Experts without tokens, one expert twice in a token.
  for (int64_t t : {1, 4, 150}) {
    EXPECT_TRUE(RunAndCheck(*f, t, 2, Routes::kFewExperts, false, false, 13));
    EXPECT_TRUE(RunAndCheck(*f, t, 8, Routes::kRepeated, false, false, 14));
  }
}

TEST_P(MoeTest, AccumulateAndUnweighted) {
  for (DType out : {DType::kF32, DType::kBF16}) {
    MoeDesc d = SmallDesc();
    d.out_dtype = out;
    auto f = MakeFixture(d, WeightFormat::kCompressedTensors, false,
                         GetParam().tier, 21);
    ASSERT_NE(f, nullptr);
    for (int64_t t : {1, 7, 40}) {
      EXPECT_TRUE(RunAndCheck(*f, t, 2, Routes::kUniform, true, false, 22));
      EXPECT_TRUE(RunAndCheck(*f, t, 2, Routes::kUniform, false, true, 23));
      EXPECT_TRUE(RunAndCheck(*f, t, 8, Routes::kSkewed, true, true, 24));
    }
  }
}

// DA8W4 with activation scales per group for x and the intermediate: the
// oracle's half step (from each row's amax) bounds the per-group steps too.
TEST_P(MoeTest, PerGroupActivationScales) {
  MoeDesc d = SmallDesc();
  d.act_quant = ActQuant::kPerGroup;
  if (d.mode != Mode::kDA8W4) {
    // W4A16 has no activation scales: refused, naming the field.
    auto c = check::RandomMoeCheckpoint(SmallDesc(),
                                        WeightFormat::kCompressedTensors, 5);
    ASSERT_TRUE(c.ok()) << c.status();
    auto layer = MoeLayer::Create(d, c->Stacked());
    ASSERT_FALSE(layer.ok());
    EXPECT_NE(layer.status().message().find("act_quant"), std::string::npos)
        << layer.status();
    return;
  }
  auto f = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                       GetParam().tier, 51);
  ASSERT_NE(f, nullptr);
  for (int64_t t : {1, 5, 40}) {
    EXPECT_TRUE(RunAndCheck(*f, t, 2, Routes::kUniform, false, false, 52));
  }
}

// Several column panels per projection, a short last panel (H = 960: 512 +
// 448 columns), per-channel groups.
TEST_P(MoeTest, WidePanels) {
  MoeDesc d;
  d.experts = 4;
  d.hidden = 960;
  d.intermediate = 1088;
  d.group_size = GetParam().mode == Mode::kDA8W4 ? 64 : -1;
  d.mode = GetParam().mode;
  d.weight_type = WeightType::kU4;
  auto f = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                       GetParam().tier, 31);
  ASSERT_NE(f, nullptr);
  for (int64_t t : {1, 3, 20}) {
    EXPECT_TRUE(RunAndCheck(*f, t, 2, Routes::kUniform, false, false, 32));
  }
}

// The same output bits with 1 and 2 threads, on w4jit's pool and on
// OpenMP, for a decode step and a batch with items of every size.
TEST_P(MoeTest, BitIdenticalAcrossThreadsAndBackends) {
  MoeDesc d = SmallDesc();
  d.hidden = 1024;
  d.out_dtype = DType::kF32;
  auto f = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                       GetParam().tier, 41);
  ASSERT_NE(f, nullptr);
  std::vector<ThreadingBackend> backends = {ThreadingBackend::kPool};
  if (internal::OpenMpAvailable())
    backends.push_back(ThreadingBackend::kOpenMP);
  for (int64_t t : {1, 37, 200}) {
    const int64_t k = 8;
    const LayerDesc d13 = internal::MoeW13Desc(d);
    const auto x = check::RandomActivations(d13, t, d.hidden, 42);
    const auto ids = RandomRouting(t, k, d.experts, Routes::kSkewed, 43);
    const auto w = RandomRouteWeights(t * k, 44);
    std::vector<float> first;
    for (ThreadingBackend b : backends) {
      ASSERT_TRUE(SetThreadingBackend(b).ok());
      for (int threads : {1, 2, 3}) {
        SetNumThreads(threads);
        std::vector<float> y(static_cast<size_t>(t * d.hidden));
        ASSERT_TRUE(f->layer
                        ->Run(t, x.data(), d.hidden, ids.data(), w.data(), k,
                              y.data(), d.hidden)
                        .ok());
        if (first.empty()) {
          first = y;
        } else {
          EXPECT_EQ(std::memcmp(first.data(), y.data(), y.size() * 4), 0)
              << "t=" << t << " threads=" << threads
              << " backend=" << static_cast<int>(b);
        }
      }
    }
  }
  SetNumThreads(0);
  ASSERT_TRUE(SetThreadingBackend(ThreadingBackend::kPool).ok());
}

// Panels are cut for the thread count at creation (wider for few
// threads): layers created for 1 and 8 threads, so with other panels,
// give the same bits.
TEST_P(MoeTest, BitIdenticalAcrossThreadCountsAtCreation) {
  MoeDesc d = SmallDesc();
  d.experts = 3;
  d.hidden = 4096;
  d.intermediate = 1536;
  d.group_size = 128;
  d.out_dtype = DType::kF32;
  SetNumThreads(1);
  auto wide = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                          GetParam().tier, 61);
  SetNumThreads(8);
  auto narrow = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                            GetParam().tier, 61);
  SetNumThreads(0);
  ASSERT_NE(wide, nullptr);
  ASSERT_NE(narrow, nullptr);
  for (int64_t t : {1, 37}) {
    const int64_t k = 2;
    const auto x =
        check::RandomActivations(internal::MoeW13Desc(d), t, d.hidden, 62);
    const auto ids = RandomRouting(t, k, d.experts, Routes::kUniform, 63);
    const auto w = RandomRouteWeights(t * k, 64);
    std::vector<float> a(static_cast<size_t>(t * d.hidden)), b(a.size());
    ASSERT_TRUE(wide->layer
                    ->Run(t, x.data(), d.hidden, ids.data(), w.data(), k,
                          a.data(), d.hidden)
                    .ok());
    ASSERT_TRUE(narrow->layer
                    ->Run(t, x.data(), d.hidden, ids.data(), w.data(), k,
                          b.data(), d.hidden)
                    .ok());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << "t=" << t;
  }
}

TEST_P(MoeTest, BadInputNamesTheValueAndWritesNothing) {
  MoeDesc d = SmallDesc();
  d.out_dtype = DType::kF32;
  auto f = MakeFixture(d, WeightFormat::kCompressedTensors, false,
                       GetParam().tier, 51);
  ASSERT_NE(f, nullptr);
  const int64_t t = 3, k = 2, h = d.hidden;
  const auto x = check::RandomActivations(internal::MoeW13Desc(d), t, h, 52);
  std::vector<int32_t> ids = {0, 1, 2, 3, 4, 5};
  std::vector<float> w = {1, 1, 1, 1, 1, 1};
  std::vector<float> y(static_cast<size_t>(t * h), 7.0f);
  auto expect_error = [&](const std::string& needle, auto&& run) {
    const absl::Status s = run();
    EXPECT_FALSE(s.ok()) << needle;
    EXPECT_NE(std::string(s.message()).find(needle), std::string::npos) << s;
    for (float v : y) ASSERT_EQ(v, 7.0f) << needle;
  };
  const MoeLayer& l = *f->layer;
  ids[3] = 10;
  expect_error("topk_ids[1, 1] = 10", [&] {
    return l.Run(t, x.data(), h, ids.data(), w.data(), k, y.data(), h);
  });
  ids[3] = -1;
  expect_error("topk_ids[1, 1] = -1", [&] {
    return l.Run(t, x.data(), h, ids.data(), w.data(), k, y.data(), h);
  });
  ids[3] = 3;
  w[5] = NAN;
  expect_error("topk_weights[2, 1] = nan", [&] {
    return l.Run(t, x.data(), h, ids.data(), w.data(), k, y.data(), h);
  });
  w[5] = INFINITY;
  expect_error("topk_weights[2, 1] = inf", [&] {
    return l.Run(t, x.data(), h, ids.data(), w.data(), k, y.data(), h);
  });
  w[5] = 1.0f;
  expect_error("k = 0", [&] {
    return l.Run(t, x.data(), h, ids.data(), w.data(), 0, y.data(), h);
  });
  expect_error("k = 11", [&] {
    return l.Run(t, x.data(), h, ids.data(), w.data(), 11, y.data(), h);
  });
  expect_error("T = -1", [&] {
    return l.Run(-1, x.data(), h, ids.data(), w.data(), k, y.data(), h);
  });
  expect_error("ldx = 127", [&] {
    return l.Run(t, x.data(), h - 1, ids.data(), w.data(), k, y.data(), h);
  });
  expect_error("x is null", [&] {
    return l.Run(t, nullptr, h, ids.data(), w.data(), k, y.data(), h);
  });
  expect_error("topk_ids is null", [&] {
    return l.Run(t, x.data(), h, nullptr, w.data(), k, y.data(), h);
  });
  expect_error("topk_weights is null", [&] {
    return l.Run(t, x.data(), h, ids.data(), nullptr, k, y.data(), h);
  });
  EXPECT_TRUE(l.Run(0, nullptr, h, nullptr, nullptr, k, nullptr, h).ok());

  // Creation errors name the expert and the projection.
  MoeDesc bad = d;
  bad.activation = Activation::kRelu;
  EXPECT_NE(
      std::string(MoeLayer::Create(bad, f->ckpt.PerExpert()).status().message())
          .find("activation = relu"),
      std::string::npos);
  bad = d;
  bad.intermediate = 100;  // not a multiple of the group size
  EXPECT_NE(
      std::string(MoeLayer::Create(bad, f->ckpt.PerExpert()).status().message())
          .find("w2 (N = hidden, K = intermediate)"),
      std::string::npos);
  MoeWeights missing = f->ckpt.PerExpert();
  missing.w2[4].scales = nullptr;
  EXPECT_NE(std::string(MoeLayer::Create(d, missing).status().message())
                .find("expert 4 w2"),
            std::string::npos);
  missing.w2.pop_back();
  EXPECT_NE(std::string(MoeLayer::Create(d, missing).status().message())
                .find("9 w2 expert views"),
            std::string::npos);
}

// The routing tensors, x and y end (or start) at a PROT_NONE page, and so
// does every buffer the layer allocates while it runs (the gathered rows,
// the intermediate, the slot outputs, kernel scratch).
TEST_P(MoeTest, RoutingTensorsAgainstGuardPages) {
  MoeDesc d = SmallDesc();
  auto f = MakeFixture(d, WeightFormat::kCompressedTensors, true,
                       GetParam().tier, 61);
  ASSERT_NE(f, nullptr);
  for (Flush flush : {Flush::kFront, Flush::kBack}) {
    GuardPageAllocator& guard = GuardPageAllocator::Instance();
    guard.set_flush(flush);
    internal::ScopedAllocatorHook hook(&guard);
    const int64_t before = guard.allocations();
    for (int64_t t : {1, 5, 33}) {
      for (int64_t k : {1, 8}) {
        const auto ids = RandomRouting(t, k, d.experts, Routes::kUniform, 62);
        const auto w = RandomRouteWeights(t * k, 63);
        const auto x =
            check::RandomActivations(internal::MoeW13Desc(d), t, d.hidden, 64);
        GuardedBuffer gi(ids.size() * 4, flush, 4), gw(w.size() * 4, flush, 4),
            gx(x.size(), flush, 2), gy(t * d.hidden * 2, flush, 2);
        std::memcpy(gi.data(), ids.data(), ids.size() * 4);
        std::memcpy(gw.data(), w.data(), w.size() * 4);
        std::memcpy(gx.data(), x.data(), x.size());
        ASSERT_TRUE(f->layer
                        ->Run(t, gx.data(), d.hidden,
                              static_cast<const int32_t*>(gi.data()),
                              static_cast<const float*>(gw.data()), k,
                              gy.data(), d.hidden)
                        .ok());
        const check::MoeExpected want =
            check::MoeOracle(d, f->ckpt, t, x.data(), d.hidden, ids.data(),
                             w.data(), k, nullptr, d.hidden, false);
        EXPECT_EQ(check::CompareMoe(d, want, t, gy.data(), d.hidden), "");
      }
    }
    // The layer's run-time buffers came from the guarded allocator.
    EXPECT_GT(guard.allocations(), before);
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> out;
  for (Mode m : {Mode::kW4A16, Mode::kDA8W4}) {
    for (IsaTier t : testing::IsaTiersWithRef()) {
      out.push_back({m, t});
    }
    // The experts' DA8W4 layers take the AMX tiles from amx_min_m rows (the
    // many-token cases), and so do the W4A16 ones (bf16 x) from theirs.
    out.push_back({m, IsaTier::kAmx});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(ModesAndTiers, MoeTest,
                         ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return absl::StrCat(
                               info.param.mode == Mode::kW4A16 ? "W4a16"
                                                               : "Da8w4",
                               "_", internal::IsaSuffix(info.param.tier));
                         });

}  // namespace
}  // namespace w4jit::testing
