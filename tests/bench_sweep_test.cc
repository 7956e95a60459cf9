// `w4jit sweep`: every candidate it may time computes the same layer as the
// reference, a wrong kernel never wins however fast it is, the tuning file
// it writes loads on this CPU, and a tuning entry (good or unusable) never
// changes results.
#include <fstream>
#include <memory>
#include <string>

#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "dispatch/param_table.h"
#include "dispatch/tuning.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/bench_data.h"
#include "perf/lib/output_check.h"
#include "perf/lib/sweep/sweep_candidates.h"
#include "perf/lib/sweep/sweep_output.h"
#include "perf/lib/sweep/sweep_runner.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::perf {
namespace {

using internal::ActiveIsa;
using internal::HostCpu;
using internal::IsaTier;
using internal::ParamMap;

bool HasJit() { return TraitsOf(ActiveIsa()).vector_bytes > 0; }

LayerDesc SmallDesc(Mode mode, WeightType type) {
  LayerDesc d;
  d.n = 88;  // not a multiple of any block width: exercises N tails
  d.k = 384;
  d.group_size = 64;
  d.weight_type = type;
  d.mode = mode;
  d.act_dtype = DType::kBF16;
  d.out_dtype = DType::kF32;
  d.has_bias = true;
  return d;
}

TEST(SweepCandidatesTest, EveryCandidateMatchesTheReference) {
  if (!HasJit()) GTEST_SKIP() << "no JIT ISA on this CPU";
  const KernelMaker maker = JitKernelMaker();
  for (Mode mode : {Mode::kDA8W4, Mode::kW4A16}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      const LayerDesc desc = SmallDesc(mode, type);
      const auto w = testing::RandomWeights(desc, 7);
      const int64_t max_m = 40;
      const auto x = testing::RandomActivations(desc, max_m, desc.k, 8);
      std::vector<float> y(max_m * desc.n);
      int built = 0;
      for (const CandidateGroup& group :
           SweepCandidates(mode, HostCpu(), ActiveIsa(), /*quick=*/false)) {
        for (const ParamMap& option : group.options) {
          std::string why;
          auto kernel = maker(desc, w, option, &why);
          ASSERT_TRUE(kernel.ok()) << kernel.status();
          if (*kernel == nullptr) {
            EXPECT_FALSE(why.empty()) << ParamsToString(option);
            // A candidate names only its own mode's parameters.
            EXPECT_EQ(why.find("unknown"), std::string::npos)
                << ToString(mode) << " " << ParamsToString(option) << ": "
                << why;
            continue;
          }
          ++built;
          for (int64_t m : {1, 5, 17, 40}) {
            (*kernel)->Run({m, x.data(), desc.k, y.data(), desc.n});
            absl::Status s =
                CheckLayerOutput(desc, w, m, x.data(), desc.k, y.data(), desc.n,
                                 CheckOptions{1000, 1000});
            EXPECT_TRUE(s.ok())
                << ToString(mode) << " " << ToString(type) << " "
                << ParamsToString(option) << " M=" << m << ": " << s;
          }
        }
      }
      EXPECT_GT(built, 3) << ToString(mode);
    }
  }
}

// Every candidate names only its family's table parameters, in range.
TEST(SweepCandidatesTest, CandidatesAreTableParameters) {
  for (Mode mode : {Mode::kDA8W4, Mode::kW4A16}) {
    for (bool quick : {false, true}) {
      for (const CandidateGroup& group :
           SweepCandidates(mode, HostCpu(), ActiveIsa(), quick)) {
        for (const ParamMap& option : group.options) {
          const bool ok = mode == Mode::kDA8W4
                              ? internal::ApplyParamTable(
                                    internal::Da8w4ParamTable(), "DA8W4",
                                    option, internal::Da8w4Params{})
                                    .ok()
                              : internal::ApplyParamTable(
                                    internal::W4a16ParamTable(), "W4A16",
                                    option, internal::W4a16Params{})
                                    .ok();
          EXPECT_TRUE(ok) << group.name << ": " << ParamsToString(option);
        }
      }
    }
  }
}

// Wraps a real kernel; for one option it skips the work and writes
// garbage, which makes it by far the fastest candidate.
class FastWrongKernel : public internal::LinearKernel {
 public:
  FastWrongKernel(int64_t n, std::unique_ptr<internal::LinearKernel> real)
      : n_(n), real_(std::move(real)) {}
  void Run(const internal::RunArgs& a) const override {
    auto* y = static_cast<uint16_t*>(a.y);  // bf16 output (BenchDesc)
    for (int64_t i = 0; i < a.m; ++i) {
      for (int64_t j = 0; j < n_; ++j) y[i * a.ldy + j] = 0x3F80;  // 1.0
    }
  }
  size_t packed_bytes() const override { return real_->packed_bytes(); }
  std::vector<std::string> kernel_names() const override {
    return real_->kernel_names();
  }
  LayerCompute compute_at(int64_t m) const override {
    return real_->compute_at(m);
  }

 private:
  int64_t n_;
  std::unique_ptr<internal::LinearKernel> real_;
};

SweepConfig TinySweep(Mode mode) {
  SweepConfig c;
  c.preset = "custom";
  c.layers = {LayerShape{"tiny", 96, 256, 64, false}};
  c.modes = {mode};
  c.ms = {1, 24};
  c.quick = true;
  c.timing.min_reps = 2;
  c.timing.min_time_s = 0.001;
  c.timing.budget_s = 0.05;
  c.timing.settle_s = 0.0;
  return c;
}

TEST(SweepRunnerTest, WrongKernelIsNeverTimedAndNeverWins) {
  if (!HasJit()) GTEST_SKIP() << "no JIT ISA on this CPU";
  const KernelMaker real = JitKernelMaker();
  const ParamMap poisoned = {{"small_m_nblk", 2}};
  KernelMaker maker = [&](const LayerDesc& d,
                          const internal::CanonicalWeights& w,
                          const ParamMap& p, std::string* why)
      -> absl::StatusOr<std::unique_ptr<internal::LinearKernel>> {
    auto k = real(d, w, p, why);
    if (!k.ok() || *k == nullptr || p != poisoned) return k;
    return std::unique_ptr<internal::LinearKernel>(
        new FastWrongKernel(d.n, *std::move(k)));
  };
  auto report = RunSweep(TinySweep(Mode::kDA8W4), nullptr, maker);
  ASSERT_TRUE(report.ok()) << report.status();
  int wrong_rows = 0;
  for (const CandidateRow& r : report->candidates) {
    if (r.params != ParamsToString(poisoned)) continue;
    EXPECT_EQ(r.status.rfind("wrong", 0), 0u) << r.status;
    EXPECT_EQ(r.median_us, 0.0);
    ++wrong_rows;
  }
  EXPECT_GT(wrong_rows, 0);
  for (const internal::TuningEntry& e : report->tuning.entries) {
    auto it = e.params.find("small_m_nblk");
    EXPECT_FALSE(it != e.params.end() && it->second == 2);
  }
  for (const WinnerRow& w : report->winners) {
    EXPECT_EQ(w.params.find("small_m_nblk=2"), std::string::npos);
    EXPECT_GT(w.default_us, 0.0);
  }
}

TEST(SweepRunnerTest, WritesATuningFileThatLoadsHere) {
  if (!HasJit()) GTEST_SKIP() << "no JIT ISA on this CPU";
  auto report = RunSweep(TinySweep(Mode::kW4A16), nullptr, JitKernelMaker());
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->winners.size(), 2u);  // one per M
  const std::string dir = ::testing::TempDir() + "/sweep_out";
  auto files = WriteSweepFiles(*report, dir);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_TRUE(w4jit::LoadTuningFile(dir + "/tuning.json").ok());
  EXPECT_EQ(internal::ActiveTuning().status, "applied");
  ASSERT_TRUE(w4jit::LoadTuningFile("").ok());
  std::ifstream in(dir + "/sweep.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "w4jit-sweep/1");
  EXPECT_EQ(j["winners"].size(), 2u);
  ASSERT_EQ(j["candidates"].size(), report->candidates.size());
  EXPECT_EQ(j["candidates"][0]["layer"], "tiny");
  EXPECT_TRUE(j["candidates"][0].contains("median_us"));
  EXPECT_NE(FormatSweepTable(*report).find("tiny"), std::string::npos);
}

// Decode M values are timed cold (each candidate over rotating copies of
// its weights, past the last-level cache), the others hot; the software
// prefetch distance, which only a cold stream can judge, is a group of its
// own at the decode M values.
TEST(SweepRunnerTest, DecodeMIsTimedColdWithThePrefetchGroup) {
  if (!HasJit()) GTEST_SKIP() << "no JIT ISA on this CPU";
  int built = 0;
  const KernelMaker real = JitKernelMaker();
  KernelMaker counting = [&](const LayerDesc& d,
                             const internal::CanonicalWeights& w,
                             const ParamMap& p, std::string* why) {
    ++built;
    return real(d, w, p, why);
  };
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    SCOPED_TRACE(ToString(mode));
    built = 0;
    auto report = RunSweep(TinySweep(mode), nullptr, counting);
    ASSERT_TRUE(report.ok()) << report.status();
    bool prefetch_at_1 = false;
    for (const CandidateRow& r : report->candidates) {
      EXPECT_EQ(r.cold, r.m <= 8) << r.m << " " << r.group;
      if (r.group == "prefetch") {
        EXPECT_EQ(r.m, 1);  // a small-M concern: never at M = 24
        prefetch_at_1 = prefetch_at_1 || r.status == "ok";
      }
    }
    EXPECT_TRUE(prefetch_at_1);
    // The tiny layer's copies: far more kernels than candidates.
    EXPECT_GT(built, 20);
    SweepConfig hot = TinySweep(mode);
    hot.cold_max_m = 0;
    report = RunSweep(hot, nullptr, JitKernelMaker());
    ASSERT_TRUE(report.ok()) << report.status();
    for (const CandidateRow& r : report->candidates) EXPECT_FALSE(r.cold);
  }
}

TEST(SweepConfigTest, ParsesShapesAndRejectsBadValues) {
  const char* ok[] = {
      "--shape=4096,4096,128", "--shape",     "512,1024,-1", "--m=1,16",
      "--modes=da8w4",         "--budget=30", "--quick"};
  auto c = ParseSweepArgs(7, ok);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->preset, "custom");
  ASSERT_EQ(c->layers.size(), 2u);
  EXPECT_EQ(c->layers[1].group_size, -1);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 16}));
  EXPECT_TRUE(c->quick);
  EXPECT_EQ(c->cold_max_m, 8);
  const char* cold[] = {"--cold-max-m=0"};
  auto hot = ParseSweepArgs(1, cold);
  ASSERT_TRUE(hot.ok()) << hot.status();
  EXPECT_EQ(hot->cold_max_m, 0);
  const char* preset[] = {"--preset=qwen2.5-7b"};
  auto p = ParseSweepArgs(1, preset);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->layers.size(), 4u);
  for (const char* bad :
       {"--shape=0,4096", "--shape=4096", "--m=1,-2", "--modes=int3",
        "--budget=-1", "--preset=nope", "--cold-max-m=-1", "--colour=red",
        "--file=/nonexistent"}) {
    const char* argv[] = {bad};
    auto r = ParseSweepArgs(1, argv);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

// A tuning entry for this CPU with parameters the kernels cannot use, or
// with good ones, leaves results within the reference's tolerance and
// keeps the JIT path (the defaults), never the reference.
TEST(TuningAppliedTest, AnyEntryKeepsResultsCorrect) {
  if (!HasJit()) GTEST_SKIP() << "no JIT ISA on this CPU";
  const std::string here = internal::CpuClassOf(HostCpu(), ActiveIsa());
  const std::vector<ParamMap> entries = {
      {{"mr", 3}, {"nblk", 2}, {"handover_m", 2}},       // da8w4, usable
      {{"mr", 99}},                                      // da8w4, too many regs
      {{"gemm_mr", 4}, {"gemm_min_m", 2}, {"kc", 128}},  // w4a16, usable
      {{"gemm_mr", 40}, {"gemm_nr_vectors", 3}},         // w4a16, unusable
      {{"vector_bits", 512}},  // zmm: unusable without AVX-512
      {{"no_such_param", 1}},
  };
  for (Mode mode : {Mode::kDA8W4, Mode::kW4A16}) {
    const LayerDesc desc = SmallDesc(mode, WeightType::kU4);
    const auto w = testing::RandomWeights(desc, 3);
    for (const ParamMap& params : entries) {
      internal::TuningFile file;
      file.cpu_class = here;
      file.entries.push_back({mode, desc.n, desc.k, desc.group_size, params});
      const std::string path = ::testing::TempDir() + "/entry.json";
      std::ofstream(path) << internal::TuningToJson(file);
      ASSERT_TRUE(w4jit::LoadTuningFile(path).ok());
      auto layer = testing::MakeLayer(desc, w);
      ASSERT_TRUE(layer.ok()) << layer.status();
      const std::string names = (*layer)->kernel_names().front();
      EXPECT_EQ(names.find("reference"), std::string::npos)
          << ParamsToString(params) << ": " << names;
      for (int64_t m : {1, 9, 33}) {
        const auto x = testing::RandomActivations(desc, m, desc.k, 4);
        EXPECT_TRUE(testing::RunAndCheck(**layer, w, m, x, desc.k, desc.n))
            << ToString(mode) << " " << ParamsToString(params) << " M=" << m;
      }
    }
  }
  ASSERT_TRUE(w4jit::LoadTuningFile("").ok());
}

}  // namespace
}  // namespace w4jit::perf
