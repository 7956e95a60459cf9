// The --model section of `w4jit bench` on MoE models: the presets and
// options, the memory check counting the experts, the routing draws and
// their byte counts, a tiny MoE model run through the section, and the
// rows' table and columns.
#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "check/moe_check.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/bench_args.h"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/sections/model_bench.h"
#include "perf/lib/sections/moe_bench.h"
#include "tests/bench_parse.h"
#include "tests/bench_sample_report.h"
#include "w4jit/moe.hpp"

namespace w4jit::perf {
namespace {

absl::StatusOr<ModelOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "model");
  return ParseJob<ModelOptions>(std::move(args));
}

TEST(BenchMoeModelConfig, PresetsAndDefaults) {
  const ModelPreset* qwen = FindModelPreset("qwen3-30b-a3b");
  ASSERT_NE(qwen, nullptr);
  ASSERT_TRUE(qwen->moe.has_value());
  EXPECT_EQ(qwen->num_layers, 48);
  ASSERT_EQ(qwen->layers.size(), 2u);
  EXPECT_EQ(qwen->layers[0].name, "qkv");
  EXPECT_EQ(qwen->layers[0].n, 5120);
  EXPECT_EQ(qwen->layers[0].k, 2048);
  EXPECT_EQ(qwen->layers[1].n, 2048);
  EXPECT_EQ(qwen->layers[1].k, 4096);
  EXPECT_EQ(qwen->moe->experts, 128);
  EXPECT_EQ(qwen->moe->top_k, 8);
  EXPECT_EQ(qwen->moe->intermediate, 768);
  const ModelPreset* oss = FindModelPreset("gpt-oss-20b");
  ASSERT_NE(oss, nullptr);
  EXPECT_EQ(oss->num_layers, 24);
  EXPECT_TRUE(oss->layers[0].has_bias);
  EXPECT_EQ(oss->layers[0].group_size, 32);
  EXPECT_EQ(oss->moe->activation, Activation::kSwigluOai);
  EXPECT_EQ(FindModelPreset("gpt-oss-120b")->moe->experts, 128);
  EXPECT_EQ(FindModelPreset("mixtral-8x7b")->layers[0].n, 6144);
  // The MoE layer data is the --moe section's.
  EXPECT_EQ(FindMoePreset("gpt-oss-20b")->hidden, oss->moe->hidden);
  // The dense lists (--preset, sweep, microbenchmarks) are unchanged.
  EXPECT_EQ(FindPreset("qwen3-30b-a3b"), nullptr);
  EXPECT_EQ(FindModelPreset("llama3-8b"), FindPreset("llama3-8b"));
  EXPECT_FALSE(FindPreset("llama3-8b")->moe.has_value());

  absl::StatusOr<ModelOptions> c = Parse({"--model=qwen3-30b-a3b"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_layers, 48);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 4, 16, 64}));
  EXPECT_FALSE(c->model_skewed);
  c = Parse(
      {"--model=gpt-oss-20b", "--layers=3", "--routing=skewed", "--m=1,2"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_layers, 3);
  EXPECT_TRUE(c->model_skewed);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 2}));
  // A dense model keeps its decode M.
  c = Parse({"--model=llama3-8b"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 4, 8, 16}));
  EXPECT_NE(BenchUsage("model").find("--routing=uniform|skewed"),
            std::string::npos);
  EXPECT_NE(BenchUsage("model").find("qwen3-30b-a3b"), std::string::npos);
}

// --prefetch and --tunings reach a MoE model's experts (all-shapes tuning
// entries), so they are taken for MoE models as for dense ones.
TEST(BenchMoeModelConfig, PrefetchAndTuningsAreTaken) {
  absl::StatusOr<ModelOptions> c =
      Parse({"--model=gpt-oss-20b", "--prefetch=0,4096"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_prefetch, (std::vector<int64_t>{0, 4096}));
  c = Parse({"--model=qwen3-30b-a3b", "--tunings=default,a.json"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_tunings.size(), 2u);
}

TEST(BenchMoeModelConfig, BadValuesAreNamed) {
  const struct {
    std::vector<const char*> args;
    const char* message;
  } cases[] = {
      {{"--model=qwen3"}, "--model: unknown 'qwen3'"},
      {{"--model=qwen3"}, "gpt-oss-20b"},  // the names it has
      {{"--model=gpt-oss-20b", "--layers=25"},
       "--layers: 25 is more than gpt-oss-20b's 24"},
      {{"--model=qwen3-30b-a3b", "--layers=0"},
       "--layers: '0' is not a positive"},
      {{"--routing=skewed"}, "--model is required"},
      {{"--model=qwen3-30b-a3b", "--routing=zipf"}, "--routing: 'zipf'"},
      {{"--model=llama3-8b", "--routing=skewed"},
       "--routing: llama3-8b is not a MoE model"},
      {{"--model=llama3-8b", "--parts"}, "--parts: llama3-8b is not a MoE"},
      {{"--model=qwen3-30b-a3b", "--hugepages=on"},
       "--hugepages: not for the MoE model"},
      {{"--model=gpt-oss-20b", "--group-size=128"},
       "--group-size: 128 does not divide K = 2880 of gpt-oss-20b's qkv"},
      {{"--model=qwen3-30b-a3b", "--group-size=512"},
       "--group-size: 512 does not divide K = 768 of qwen3-30b-a3b's "
       "experts"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ModelOptions> r = Parse(c.args);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status().message();
  }
}

TEST(BenchMoeModelMemory, EstimateCountsTheExperts) {
  absl::StatusOr<ModelOptions> c = Parse({"--model=qwen3-30b-a3b"});
  ASSERT_TRUE(c.ok());
  const ModelPreset& qwen = *FindModelPreset("qwen3-30b-a3b");
  const ModelMemory need = EstimateModelMemory(*c, qwen, int64_t{1} << 30);
  // 128 experts x 3 x 2048 x 768 int4 weights: 302 MB a layer and mode,
  // plus the attention's 9.4 MB and the scales.
  const int64_t experts_bytes = int64_t{128} * 3 * 2048 * 768 / 2;
  EXPECT_GT(need.per_layer_bytes, 2 * (experts_bytes + 9400000));
  EXPECT_LT(need.per_layer_bytes, 2 * (experts_bytes + 9400000) * 6 / 5);
  EXPECT_EQ(need.packed_bytes, need.per_layer_bytes * 48);
  // The whole model in both modes does not fit 24 GiB; the error names
  // the --layers that would.
  const int64_t available = int64_t{24} << 30;
  const absl::Status s = CheckModelMemory(*c, need, available);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const int64_t fit =
      (available - need.read_buffer_bytes - need.scratch_bytes) /
      need.per_layer_bytes;
  EXPECT_NE(
      std::string(s.message()).find(absl::StrCat("--layers=", fit, " fits")),
      std::string::npos)
      << s.message();
  EXPECT_GT(fit, 10);
  EXPECT_LT(fit, 48);
  // The import scratch is the experts' random checkpoint: at least a byte
  // a weight.
  EXPECT_GT(need.scratch_bytes, 2 * experts_bytes);
}

// A MoE layer's real packed bytes against the estimate, both modes.
TEST(BenchMoeModelMemory, EstimateBoundsPackedExperts) {
  for (const MoePreset& p : {MoePreset{"tiny", 256, 128, 4, 2},
                             MoePreset{"tiny-oss", 192, 192, 4, 2, 32, true,
                                       Activation::kSwigluOai}}) {
    for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
      const MoeDesc d = MoePresetDesc(p, mode, WeightType::kS4);
      absl::StatusOr<check::MoeCheckpoint> ckpt =
          check::RandomMoeCheckpoint(d, WeightFormat::kCompressedTensors, 3);
      ASSERT_TRUE(ckpt.ok()) << ckpt.status();
      absl::StatusOr<std::unique_ptr<MoeLayer>> layer =
          MoeLayer::Create(d, ckpt->Stacked());
      ASSERT_TRUE(layer.ok()) << layer.status();
      int64_t estimate = 0;
      for (const LayerShape& s : MoeExpertShapes(p)) {
        estimate += EstimatePackedBytes(s, WeightType::kS4);
      }
      const int64_t actual =
          static_cast<int64_t>((*layer)->expert_packed_bytes());
      EXPECT_GE(estimate, actual) << p.name << " " << ToString(mode);
      // Group 32: the estimate's 8 bytes of metadata a group and column
      // weigh more.
      const int64_t slack = p.group_size == 32 ? 3 : 5;
      EXPECT_LE(estimate, actual * slack / (slack - 1))
          << p.name << " " << ToString(mode);
    }
  }
}

TEST(BenchMoeModelRouting, DrawsCountTheirDistinctExperts) {
  const MoePreset p{"r", 64, 32, 16, 4};
  const int layers = 3;
  for (bool skewed : {false, true}) {
    for (int64_t t : {1, 5, 64}) {
      const std::vector<StepRoutingDraw> draws =
          DrawModelRouting(p, layers, t, skewed, 6, 11);
      ASSERT_EQ(draws.size(), 6u);
      std::set<std::vector<int32_t>> different;
      for (const StepRoutingDraw& d : draws) {
        ASSERT_EQ(d.ids.size(), static_cast<size_t>(layers * t * p.top_k));
        ASSERT_EQ(d.weights.size(), d.ids.size());
        ASSERT_EQ(d.distinct.size(), static_cast<size_t>(layers));
        int64_t total = 0;
        for (int l = 0; l < layers; ++l) {
          const int32_t* ids = d.ids.data() + l * t * p.top_k;
          std::set<int32_t> seen;
          for (int64_t i = 0; i < t; ++i) {
            std::set<int32_t> token(ids + i * p.top_k, ids + (i + 1) * p.top_k);
            EXPECT_EQ(token.size(), static_cast<size_t>(p.top_k));
            if (skewed) {
              EXPECT_EQ(token.count(0), 1u);
            }
            float sum = 0.0f;
            for (int64_t j = 0; j < p.top_k; ++j) {
              const float w = d.weights[(l * t + i) * p.top_k + j];
              EXPECT_GT(w, 0.0f);
              sum += w;
            }
            EXPECT_NEAR(sum, 1.0f, 1e-5f);
            seen.insert(token.begin(), token.end());
          }
          for (int32_t e : seen) {
            EXPECT_GE(e, 0);
            EXPECT_LT(e, p.experts);
          }
          EXPECT_EQ(d.distinct[l], static_cast<int64_t>(seen.size()));
          EXPECT_EQ(d.distinct[l], DistinctExperts(ids, t * p.top_k));
          total += d.distinct[l];
        }
        EXPECT_EQ(d.total(), total);
        if (t == 1) {
          EXPECT_EQ(total, layers * p.top_k);
        }
        different.insert(d.ids);
      }
      // Fresh routing every step.
      EXPECT_EQ(different.size(), draws.size());
    }
  }
  // Seeded: the same draws again.
  EXPECT_EQ(DrawModelRouting(p, 2, 4, false, 2, 5)[1].ids,
            DrawModelRouting(p, 2, 4, false, 2, 5)[1].ids);
}

TEST(BenchMoeModelRouting, MeanOverTheTimedSteps) {
  bool exact = false;
  // Two warm-ups, then the timed steps.
  EXPECT_DOUBLE_EQ(MeanTimedExperts({100, 100, 4, 6, 8}, 3, &exact), 6.0);
  EXPECT_TRUE(exact);
  // Untimed calls interleaved: every call's mean.
  EXPECT_DOUBLE_EQ(MeanTimedExperts({2, 4, 6, 8, 10, 12}, 3, &exact), 7.0);
  EXPECT_FALSE(exact);
  EXPECT_DOUBLE_EQ(MeanTimedExperts({}, 0, &exact), 0.0);
}

// A tiny MoE model (two decoder layers of four) through the section:
// every row ok, its bytes the attention's plus the distinct experts'.
TEST(BenchMoeModelRun, TinyModelRowsHaveConsistentBytes) {
  for (const MoePreset& moe : {MoePreset{"tiny", 256, 128, 8, 2},
                               MoePreset{"tiny-oss", 192, 192, 8, 2, 32, true,
                                         Activation::kSwigluOai}}) {
    ModelPreset model;
    model.name = absl::StrCat(moe.name, "-model");
    model.layers = {{"qkv", 384, moe.hidden, moe.group_size, moe.biases},
                    {"o_proj", moe.hidden, 256, moe.group_size, moe.biases}};
    model.num_layers = 4;
    model.moe = moe;
    absl::StatusOr<ModelOptions> c = Parse(
        {"--model=qwen3-30b-a3b", "--layers=2", "--m=1,3,64", "--steps=3"});
    ASSERT_TRUE(c.ok()) << c.status();
    BenchReport report;
    std::vector<std::string> said;
    const absl::Status s = RunModelBenchOn(
        *c, model, [&](const std::string& line) { said.push_back(line); },
        nullptr, &report);
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(report.model, model.name);
    // 2 variants x 2 modes x 3 T.
    ASSERT_EQ(report.model_rows.size(), 12u);
    // Per mode and variant: qkv, o_proj and the MoE layer.
    EXPECT_EQ(report.model_layers.size(), 12u);
    for (const ModelRow& r : report.model_rows) {
      SCOPED_TRACE(
          absl::StrCat(moe.name, " ", r.impl, " ", r.variant, " T=", r.m));
      ASSERT_TRUE(r.ok()) << r.note;
      EXPECT_TRUE(r.is_moe());
      EXPECT_EQ(r.routing, "uniform");
      EXPECT_EQ(r.layers, 2);
      EXPECT_EQ(r.model_layers, 4);
      EXPECT_EQ(r.calls, 4);
      EXPECT_EQ(r.moe_calls, 2);
      EXPECT_EQ(r.samples, 3);
      EXPECT_GT(r.attention_bytes, 0);
      EXPECT_GT(r.expert_bytes, 0);
      // T = 1: each layer touches exactly top-k experts; T = 64 all 8
      // (a token misses a given expert with p = 3/4: (3/4)^64).
      if (r.m == 1) {
        EXPECT_DOUBLE_EQ(r.experts_per_layer, 2.0);
      }
      if (r.m == 64) {
        EXPECT_DOUBLE_EQ(r.experts_per_layer, 8.0);
      }
      EXPECT_GE(r.experts_per_layer, 2.0);
      EXPECT_LE(r.experts_per_layer, 6.0 * (r.m == 3) + 8.0 * (r.m != 3));
      EXPECT_EQ(r.weight_bytes,
                r.attention_bytes +
                    std::llround(r.experts_per_layer * 2 *
                                 static_cast<double>(r.expert_bytes)));
      const double macs =
          2.0 * static_cast<double>(r.m) *
          (384.0 * moe.hidden + moe.hidden * 256.0 +
           3.0 * 2 * static_cast<double>(moe.hidden * moe.intermediate));
      EXPECT_DOUBLE_EQ(r.macs, macs);
      EXPECT_GT(r.time_ms, 0.0);
      EXPECT_GT(r.read_gbps, 0.0);
      EXPECT_GT(r.peak_gmacs, 0.0);
    }
    // The attention's bytes are the linears' packed bytes of both layers.
    int64_t attention = 0;
    for (const LayerInfo& info : report.model_layers) {
      if (info.impl == kImplW4a16 &&
          (info.layer == "qkv" || info.layer == "o_proj")) {
        attention += 2 * info.packed_bytes;
      }
    }
    EXPECT_EQ(report.model_rows.front().attention_bytes, attention);
    EXPECT_FALSE(said.empty());
  }
}

// --parts: the attention linears alone and the MoE layers alone beside
// every whole step, their bytes adding up to the step's.
TEST(BenchMoeModelRun, PartsSplitTheStep) {
  ModelPreset model;
  model.name = "tiny-model";
  model.layers = {{"qkv", 384, 256, 128, false},
                  {"o_proj", 256, 256, 128, false}};
  model.num_layers = 2;
  model.moe = MoePreset{"tiny", 256, 128, 8, 2};
  absl::StatusOr<ModelOptions> c =
      Parse({"--model=qwen3-30b-a3b", "--layers=2", "--m=1", "--steps=3",
             "--parts", "--epilogues=plain", "--modes=da8w4"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->model_parts);
  BenchReport report;
  ASSERT_TRUE(RunModelBenchOn(
                  *c, model, [](const std::string&) {}, nullptr, &report)
                  .ok());
  ASSERT_EQ(report.model_rows.size(), 3u);
  const ModelRow& step = report.model_rows[0];
  const ModelRow& attention = report.model_rows[1];
  const ModelRow& moe = report.model_rows[2];
  EXPECT_EQ(step.part, "");
  EXPECT_EQ(attention.part, "attention");
  EXPECT_EQ(moe.part, "moe");
  EXPECT_EQ(attention.weight_bytes, step.attention_bytes);
  EXPECT_DOUBLE_EQ(attention.experts_per_layer, 0.0);
  EXPECT_DOUBLE_EQ(moe.experts_per_layer, 2.0);  // T = 1: top-2
  EXPECT_EQ(moe.weight_bytes, 2 * 2 * moe.expert_bytes);
  EXPECT_EQ(attention.weight_bytes + moe.weight_bytes, step.weight_bytes);
  EXPECT_DOUBLE_EQ(attention.macs + moe.macs, step.macs);
  for (const ModelRow& r : report.model_rows) {
    EXPECT_TRUE(r.ok()) << r.part << ": " << r.note;
    EXPECT_GT(r.min_ms, 0.0) << r.part;
  }
  EXPECT_NE(Squeezed(FormatReport(report)).find("da8w4 plain decode attention"),
            std::string::npos)
      << FormatReport(report);
}

TEST(BenchMoeModelRun, LayersOutsideThePresetAreAnError) {
  ModelPreset model;
  model.name = "tiny";
  model.layers = {{"qkv", 64, 64, 32, false}};
  model.num_layers = 1;
  model.moe = MoePreset{"tiny", 64, 64, 4, 2, 32};
  ModelOptions c;
  c.model_layers = 2;
  BenchReport report;
  const absl::Status s = RunModelBenchOn(
      c, model, [](const std::string&) {}, nullptr, &report);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--layers: 2 is not in [1, 1] for tiny"),
            std::string::npos)
      << s;
}

ModelRow SampleMoeRow(const char* impl, int64_t m, double ms) {
  ModelRow r;
  r.impl = impl;
  r.model = "qwen3-30b-a3b";
  r.layers = 12;
  r.model_layers = 48;
  r.variant = "fused";
  r.step = "decode";
  r.m = m;
  r.calls = 24;
  r.routing = "uniform";
  r.moe_calls = 12;
  r.attention_bytes = 100000000;
  r.expert_bytes = 2400000;
  r.experts_per_layer = 8.0;
  r.weight_bytes = 100000000 + 12 * 8 * 2400000;  // 330.4 MB
  r.macs = 2e9;
  TimingResult step;
  step.samples = 10;
  step.median_us = ms * 1e3;
  step.min_us = ms * 0.8e3;
  step.p90_us = ms * 1.2e3;
  TimingResult read;
  read.samples = 10;
  read.median_us = 50e3;  // 40 GB/s
  read.min_us = 40e3;     // 50 GB/s
  read.p90_us = 44e3;
  FillModelRowFigures(step, read, 2e9, &r);
  TimingResult peak;
  peak.median_us = 20e3;  // 1e9 MACs: 50 GMAC/s
  peak.min_us = 10e3;     // 100 GMAC/s
  FillModelRowPeak(peak, 1e9, &r);
  return r;
}

TEST(BenchMoeModelReport, FiguresTableAndColumns) {
  const ModelRow r = SampleMoeRow(kImplDa8w4, 4, 20.0);
  EXPECT_DOUBLE_EQ(r.peak_gmacs, 50.0);
  EXPECT_DOUBLE_EQ(r.peak_gmacs_best, 100.0);
  // tokens/s, the shares of the peak and the bound that binds:
  // tests/python/test_report.py.

  BenchReport report;
  report.preset = report.model = "qwen3-30b-a3b";
  report.model_read_bytes = int64_t{1} << 30;
  report.model_rows.push_back(SampleMoeRow(kImplW4a16, 1, 25.0));
  report.model_rows.push_back(r);
  ModelRow failed = SampleMoeRow(kImplDa8w4, 64, 1.0);
  failed.status = RowStatus::kError;
  failed.note = "out of experts";
  report.model_rows.push_back(failed);
  const std::string text = FormatReport(report);
  for (const char* s : {"== model qwen3-30b-a3b", "error   out of experts"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }

  const nlohmann::json doc = nlohmann::json::parse(ToJson(report));
  const nlohmann::json& row = doc["model"]["rows"][1];
  EXPECT_EQ(row["routing"], "uniform");
  EXPECT_DOUBLE_EQ(row["experts_per_layer"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(row["peak_gmacs_best"].get<double>(), 100.0);
  EXPECT_EQ(row["model_layers"], 48);
}

}  // namespace
}  // namespace w4jit::perf
