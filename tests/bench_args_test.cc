// `w4jit bench` options and the model presets they name.
#include "perf/lib/bench_args.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "perf/lib/sections/scaling_bench.h"
#include "perf/lib/sweep/sweep_runner.h"
#include "perf/model_presets.h"
#include "tests/bench_parse.h"

namespace w4jit::perf {
namespace {

absl::StatusOr<LayersOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "layers");
  return ParseJob<LayersOptions>(std::move(args));
}

absl::StatusOr<BenchArgs> ParseAll(std::vector<const char*> args) {
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

TEST(BenchArgs, LayersDefaultsAreTheFullLlamaRun) {
  absl::StatusOr<LayersOptions> c = Parse({});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->preset, "llama3-8b");
  EXPECT_EQ(c->layers.size(), 4u);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 4, 16, 64, 256, 1024, 4096}));
  EXPECT_EQ(c->modes.size(), 2u);
  EXPECT_TRUE(c->peers);
  EXPECT_EQ(c->out_dir, "w4jit-bench-out");
  EXPECT_FALSE(c->quick);
  EXPECT_FALSE(c->act_order);
}

TEST(BenchArgs, LayersParsesEveryOption) {
  absl::StatusOr<LayersOptions> c =
      Parse({"--preset", "qwen2.5-7b", "--m=1,16,256", "--threads=3",
             "--modes=da8w4", "--reps", "7", "--min-time=0.5", "--budget=2",
             "--out=/tmp/x", "--peers=none", "--weights=u4", "--cold-max-m=4",
             "--settle=0.001", "--act-order"});
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
  EXPECT_TRUE(c->act_order);
}

TEST(BenchArgs, ScalingNamesItsLayer) {
  absl::StatusOr<ScalingOptions> c = ParseJob<ScalingOptions>({"scaling"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ScalingLayer(*c)->name, "o_proj");  // llama3-8b: 4096 x 4096
  c = ParseJob<ScalingOptions>({"scaling", "--layer=qkv"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ScalingLayer(*c)->name, "qkv");
  c = ParseJob<ScalingOptions>({"scaling", "--layer=nope"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(ScalingLayer(*c), nullptr);
  // Each job has its own options: scaling has no M.
  EXPECT_FALSE(ParseJob<ScalingOptions>({"scaling", "--m=1"}).ok());
}

TEST(BenchArgs, MoeTakesModelsAndTokens) {
  absl::StatusOr<MoeOptions> c = ParseJob<MoeOptions>({"moe"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->presets, std::vector<std::string>{"qwen3-30b-a3b"});
  EXPECT_EQ(c->tokens, (std::vector<int64_t>{1, 4, 16, 64, 256}));
  c = ParseJob<MoeOptions>(
      {"moe", "--models=gpt-oss-20b,mixtral-8x7b", "--tokens=1,4", "--quick"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->presets.size(), 2u);
  EXPECT_EQ(c->tokens, (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(ParseJob<MoeOptions>({"moe", "--models=gpt5"}).ok());
  EXPECT_FALSE(ParseJob<MoeOptions>({"moe", "--m=1"}).ok());
}

TEST(BenchArgs, ShapesReplaceThePreset) {
  absl::StatusOr<LayersOptions> c =
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

TEST(BenchArgs, QuickSetsSmallDefaultsThatOptionsOverride) {
  absl::StatusOr<LayersOptions> c = Parse({"--m=2,8", "--quick"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->quick);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{2, 8}));
  EXPECT_LT(c->timing.min_reps, 20);
  c = Parse({"--quick"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(c->cold_max_m, 1);
}

TEST(BenchArgs, BadInputIsAnErrorThatNamesIt) {
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
    absl::StatusOr<LayersOptions> c = Parse(args);
    EXPECT_FALSE(c.ok()) << args[0];
  }
  EXPECT_NE(Parse({"--preset=gpt2"}).status().message().find("gpt2"),
            std::string::npos);
  absl::StatusOr<BenchArgs> job = ParseAll({"frob"});
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("frob"), std::string::npos);
}

TEST(BenchArgs, HelpPerJob) {
  absl::StatusOr<BenchArgs> all = ParseAll({"--help"});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_TRUE(all->jobs.empty());
  for (const std::string& job : BenchJobNames()) {
    EXPECT_NE(all->help.find(job), std::string::npos) << job;
    const std::string usage = BenchUsage(job);
    EXPECT_EQ(usage.rfind("usage: w4jit bench " + job + " [options]", 0), 0u)
        << usage;
    absl::StatusOr<BenchArgs> h = ParseAll({job.c_str(), "--help"});
    ASSERT_TRUE(h.ok()) << h.status();
    EXPECT_EQ(h->help, usage);
  }
  const std::string layers = BenchUsage("layers");
  for (const char* opt :
       {"--preset", "--shape", "--m=", "--threads", "--modes", "--reps",
        "--min-time", "--out", "--quick", "--act-order", "llama3-70b-tp4"}) {
    EXPECT_NE(layers.find(opt), std::string::npos) << opt;
  }
  EXPECT_EQ(layers.find("--model"), std::string::npos);
  EXPECT_EQ(layers.find("--scaling"), std::string::npos);
}

// Options without a job are the old spelling: translated into the jobs
// they ran, with one line that names the new commands.
TEST(BenchArgs, OldSpellingsRunAsTheirJobs) {
  absl::StatusOr<BenchArgs> a = ParseAll({});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->jobs.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<LayersOptions>(a->jobs[0]));
  EXPECT_NE(a->deprecation.find("`w4jit bench layers`"), std::string::npos)
      << a->deprecation;

  a = ParseAll({"--quick", "--shape=1024,1024", "--m", "1", "--scaling",
                "--peers=none", "--accuracy-rows=3"});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->jobs.size(), 3u);
  const auto& layers = std::get<LayersOptions>(a->jobs[0]);
  EXPECT_EQ(layers.ms, std::vector<int64_t>{1});
  EXPECT_FALSE(layers.peers);
  EXPECT_TRUE(layers.quick);
  const auto& scaling = std::get<ScalingOptions>(a->jobs[1]);
  EXPECT_EQ(scaling.layers[0].n, 1024);
  const auto& accuracy = std::get<AccuracyOptions>(a->jobs[2]);
  EXPECT_EQ(accuracy.accuracy_rows, 3);
  EXPECT_EQ(accuracy.ms, std::vector<int64_t>{1});
  EXPECT_NE(a->deprecation.find("deprecated"), std::string::npos);
  EXPECT_NE(a->deprecation.find("`w4jit bench scaling --quick "
                                "--shape=1024,1024`"),
            std::string::npos)
      << a->deprecation;

  a = ParseAll({"--moe=gpt-oss-20b", "--m=1,4", "--threads=2"});
  ASSERT_TRUE(a.ok()) << a.status();
  const auto& moe = std::get<MoeOptions>(a->jobs.at(0));
  EXPECT_EQ(moe.presets, std::vector<std::string>{"gpt-oss-20b"});
  EXPECT_EQ(moe.tokens, (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(moe.threads, 2);

  a = ParseAll({"--model=llama3-8b", "--layers=2", "--m=1"});
  ASSERT_TRUE(a.ok()) << a.status();
  const auto& model = std::get<ModelOptions>(a->jobs.at(0));
  EXPECT_EQ(model.model_layers, 2);
  EXPECT_EQ(model.ms, std::vector<int64_t>{1});

  a = ParseAll({"--scaling-layer=qkv"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(std::get<ScalingOptions>(a->jobs.at(1)).layer, "qkv");

  // An option no job has is still an error.
  EXPECT_FALSE(ParseAll({"--frobnicate=1"}).ok());
  EXPECT_FALSE(ParseAll({"--m=0"}).ok());
}

// bench and sweep report an unknown option, a missing value and a bad value
// the same way (cli/flags.h), each naming the option.
TEST(BenchArgs, ErrorsAreReportedAsSweepReportsThem) {
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
    const char* bench_argv[] = {"layers", c.arg};
    const char* sweep_argv[] = {c.arg};
    absl::StatusOr<BenchArgs> bench = ParseBenchArgs(2, bench_argv);
    absl::StatusOr<SweepConfig> sweep = ParseSweepArgs(1, sweep_argv);
    ASSERT_FALSE(bench.ok()) << c.arg;
    ASSERT_FALSE(sweep.ok()) << c.arg;
    const std::string b(bench.status().message());
    const std::string s(sweep.status().message());
    EXPECT_NE(b.find(c.message), std::string::npos) << b;
    EXPECT_NE(s.find(c.message), std::string::npos) << s;
    EXPECT_NE(b.find("(see w4jit bench layers --help)"), std::string::npos)
        << b;
    EXPECT_NE(s.find("(see w4jit sweep --help)"), std::string::npos) << s;
  }
}

TEST(BenchArgs, HelpWinsOverABadValue) {
  const char* argv[] = {"layers", "--m=0", "--help"};
  absl::StatusOr<BenchArgs> c = ParseBenchArgs(3, argv);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->help.empty());
  absl::StatusOr<SweepConfig> s = ParseSweepArgs(2, argv + 1);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->help);
  EXPECT_NE(SweepUsage().find("--file=PATH"), std::string::npos);
}

}  // namespace
}  // namespace w4jit::perf
