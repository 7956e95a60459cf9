// `w4jit bench` options and the model presets they name.
#include "perf/lib/bench_config.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "perf/lib/sections/scaling_bench.h"
#include "perf/lib/sweep/sweep_runner.h"
#include "perf/model_presets.h"

namespace w4jit::perf {
namespace {

absl::StatusOr<BenchConfig> Parse(std::vector<const char*> args) {
  return ParseBenchArgs(static_cast<int>(args.size()), args.data());
}

TEST(BenchPresets, ShapesAreThoseOfPerformanceMd) {
  const ModelPreset* llama = FindPreset("llama3-8b");
  ASSERT_NE(llama, nullptr);
  ASSERT_EQ(llama->layers.size(), 4u);
  const struct {
    const char* preset;
    const char* layer;
    int64_t n, k;
    bool bias;
  } expected[] = {
      {"llama3-8b", "qkv", 6144, 4096, false},
      {"llama3-8b", "o_proj", 4096, 4096, false},
      {"llama3-8b", "gate_up", 28672, 4096, false},
      {"llama3-8b", "down", 4096, 14336, false},
      {"llama3-70b-tp4", "qkv", 2560, 8192, false},
      {"llama3-70b-tp4", "o_proj", 8192, 2048, false},
      {"llama3-70b-tp4", "gate_up", 14336, 8192, false},
      {"llama3-70b-tp4", "down", 8192, 7168, false},
      {"qwen2.5-7b", "qkv", 4608, 3584, true},
      {"qwen2.5-7b", "o_proj", 3584, 3584, false},
      {"qwen2.5-7b", "gate_up", 37888, 3584, false},
      {"qwen2.5-7b", "down", 3584, 18944, false},
  };
  for (const auto& e : expected) {
    const ModelPreset* p = FindPreset(e.preset);
    ASSERT_NE(p, nullptr) << e.preset;
    bool found = false;
    for (const LayerShape& l : p->layers) {
      if (l.name != e.layer) continue;
      found = true;
      EXPECT_EQ(l.n, e.n) << e.preset << " " << e.layer;
      EXPECT_EQ(l.k, e.k) << e.preset << " " << e.layer;
      EXPECT_EQ(l.group_size, 128);
      EXPECT_EQ(l.has_bias, e.bias) << e.preset << " " << e.layer;
    }
    EXPECT_TRUE(found) << e.preset << " " << e.layer;
  }
  EXPECT_EQ(FindPreset("gpt-2"), nullptr);
  EXPECT_EQ(PresetNames(), "llama3-8b, llama3-70b-tp4, qwen2.5-7b");
}

TEST(BenchConfig, DefaultsAreTheFullLlamaRun) {
  absl::StatusOr<BenchConfig> c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->preset, "llama3-8b");
  EXPECT_EQ(c->layers.size(), 4u);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 4, 16, 64, 256, 1024, 4096}));
  EXPECT_EQ(c->modes.size(), 2u);
  EXPECT_TRUE(c->peers);
  EXPECT_EQ(c->out_dir, "w4jit-bench-out");
  EXPECT_FALSE(c->quick);
}

TEST(BenchConfig, ParsesEveryOption) {
  absl::StatusOr<BenchConfig> c = Parse(
      {"--preset", "qwen2.5-7b", "--m=1,16,256", "--threads=3", "--modes=da8w4",
       "--reps", "7", "--min-time=0.5", "--budget=2", "--out=/tmp/x",
       "--peers=none", "--weights=u4", "--cold-max-m=4", "--settle=0.001"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->preset, "qwen2.5-7b");
  EXPECT_TRUE(c->layers[0].has_bias);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 16, 256}));
  EXPECT_EQ(c->threads, 3);
  EXPECT_EQ(c->modes, std::vector<Mode>{Mode::kDA8W4});
  EXPECT_EQ(c->timing.min_reps, 7);
  EXPECT_DOUBLE_EQ(c->timing.min_time_s, 0.5);
  EXPECT_DOUBLE_EQ(c->timing.budget_s, 2.0);
  EXPECT_DOUBLE_EQ(c->timing.settle_s, 0.001);
  EXPECT_EQ(c->out_dir, "/tmp/x");
  EXPECT_FALSE(c->peers);
  EXPECT_EQ(c->weight_type, WeightType::kU4);
  EXPECT_EQ(c->cold_max_m, 4);
  EXPECT_FALSE(c->scaling);
}

TEST(BenchConfig, ScalingIsAFlagAndCanNameItsLayer) {
  absl::StatusOr<BenchConfig> c = Parse({"--scaling", "--m=1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->scaling);
  EXPECT_EQ(c->ms, std::vector<int64_t>{1});
  EXPECT_EQ(ScalingLayer(*c)->name, "o_proj");  // llama3-8b: 4096 x 4096
  c = Parse({"--scaling-layer=qkv"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->scaling);
  EXPECT_EQ(ScalingLayer(*c)->name, "qkv");
  c = Parse({"--scaling-layer=nope"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ScalingLayer(*c), nullptr);
}

TEST(BenchConfig, ShapesReplaceThePreset) {
  absl::StatusOr<BenchConfig> c =
      Parse({"--shape=256,512", "--shape", "64,128,-1", "--preset=llama3-8b"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->preset, "custom");
  ASSERT_EQ(c->layers.size(), 2u);
  EXPECT_EQ(c->layers[0].n, 256);
  EXPECT_EQ(c->layers[0].k, 512);
  EXPECT_EQ(c->layers[0].group_size, 128);
  EXPECT_EQ(c->layers[1].group_size, -1);
  EXPECT_EQ(c->layers[1].name, "64x128");
}

TEST(BenchConfig, QuickSetsSmallDefaultsThatOptionsOverride) {
  absl::StatusOr<BenchConfig> c = Parse({"--m=2,8", "--quick"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->quick);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{2, 8}));
  EXPECT_LT(c->timing.min_reps, 20);
  c = Parse({"--quick"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 16}));
}

TEST(BenchConfig, PrefillRowsAreAccepted) {
  absl::StatusOr<BenchConfig> c = Parse({"--m=1024,4096"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1024, 4096}));
}

TEST(BenchConfig, BadInputIsAnErrorThatNamesIt) {
  for (const std::vector<const char*>& args :
       std::vector<std::vector<const char*>>{{"--preset=gpt2"},
                                             {"--m=1,x"},
                                             {"--m=0"},
                                             {"--modes=w8a8"},
                                             {"--shape=5"},
                                             {"--shape=64,64,0"},
                                             {"--threads=-1"},
                                             {"--frobnicate=1"},
                                             {"--reps"},
                                             {"stray"}}) {
    absl::StatusOr<BenchConfig> c = Parse(args);
    EXPECT_FALSE(c.ok()) << args[0];
  }
  EXPECT_NE(Parse({"--preset=gpt2"}).status().message().find("gpt2"),
            std::string::npos);
}

TEST(BenchConfig, HelpListsTheOptions) {
  absl::StatusOr<BenchConfig> c = Parse({"--help"});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->help);
  const std::string usage = BenchUsage();
  for (const char* opt :
       {"--preset", "--shape", "--m=", "--threads", "--modes", "--reps",
        "--min-time", "--out", "--quick", "--scaling", "llama3-70b-tp4"}) {
    EXPECT_NE(usage.find(opt), std::string::npos) << opt;
  }
}

// bench and sweep report an unknown option, a missing value and a bad value
// the same way (cli/flags.h), each naming the option.
TEST(BenchConfig, ErrorsAreReportedAsSweepReportsThem) {
  const struct {
    const char* arg;
    const char* message;
  } cases[] = {
      {"--frobnicate=1", "not expected: --frobnicate=1"},
      {"--m", "--m: 1 required LIST missing"},
      {"--m=1,x", "--m: 'x' is not a positive integer (in '1,x')"},
      {"--modes=w8a8", "--modes: 'w8a8' is not w4a16 or da8w4"},
      {"--shape=5", "--shape: want N,K[,G]"},
      {"--preset=gpt2", "--preset: unknown 'gpt2'"},
  };
  for (const auto& c : cases) {
    const char* argv[] = {c.arg};
    absl::StatusOr<BenchConfig> bench = ParseBenchArgs(1, argv);
    absl::StatusOr<SweepConfig> sweep = ParseSweepArgs(1, argv);
    ASSERT_FALSE(bench.ok()) << c.arg;
    ASSERT_FALSE(sweep.ok()) << c.arg;
    const std::string b(bench.status().message());
    const std::string s(sweep.status().message());
    EXPECT_NE(b.find(c.message), std::string::npos) << b;
    EXPECT_NE(s.find(c.message), std::string::npos) << s;
    EXPECT_NE(b.find("(see w4jit bench --help)"), std::string::npos) << b;
    EXPECT_NE(s.find("(see w4jit sweep --help)"), std::string::npos) << s;
  }
}

TEST(BenchConfig, HelpWinsOverABadValue) {
  const char* argv[] = {"--m=0", "--help"};
  absl::StatusOr<BenchConfig> c = ParseBenchArgs(2, argv);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->help);
  absl::StatusOr<SweepConfig> s = ParseSweepArgs(2, argv);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->help);
  EXPECT_NE(SweepUsage().find("--file=PATH"), std::string::npos);
}

}  // namespace
}  // namespace w4jit::perf
