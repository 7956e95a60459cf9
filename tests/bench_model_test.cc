// The --model section of `w4jit bench`: its options, the memory check and
// the report's columns (not its timings).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/bench_args.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/sections/model_bench.h"
#include "runtime/formats/import.h"
#include "tests/bench_parse.h"
#include "tests/bench_sample_report.h"
#include "w4jit/layer.hpp"

namespace w4jit::perf {
namespace {

absl::StatusOr<ModelOptions> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "model");
  return ParseJob<ModelOptions>(std::move(args));
}

TEST(BenchModelConfig, ModelTakesThePresetsLayersAndDecodeMs) {
  absl::StatusOr<ModelOptions> c = Parse({"--model=llama3-8b"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model, "llama3-8b");
  EXPECT_EQ(c->model_layers, 32);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 4, 8, 16}));
  EXPECT_TRUE(c->prefill_ms.empty());
  EXPECT_EQ(c->model_steps, 10);
  EXPECT_EQ(c->model_variants, (std::vector<std::string>{"plain", "fused"}));

  c = Parse({"--model", "qwen2.5-7b", "--layers=3", "--m=1,2", "--steps=4",
             "--prefill-m=128", "--epilogues=fused", "--modes=da8w4"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_layers, 3);
  EXPECT_EQ(c->ms, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c->prefill_ms, (std::vector<int64_t>{128}));
  EXPECT_EQ(c->model_steps, 4);
  EXPECT_EQ(c->model_variants, (std::vector<std::string>{"fused"}));
  EXPECT_EQ(c->modes, (std::vector<Mode>{Mode::kDA8W4}));

  EXPECT_TRUE(c->model_prefetch.empty());
  EXPECT_EQ(c->model_huge_pages, (std::vector<bool>{false}));
  c = Parse({"--model=llama3-8b", "--prefetch=0,512", "--hugepages=both"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_prefetch, (std::vector<int64_t>{0, 512}));
  EXPECT_EQ(c->model_huge_pages, (std::vector<bool>{false, true}));
  EXPECT_EQ(c->model_group_size, 0);  // the preset's
  c = Parse({"--model=llama3-8b", "--group-size=32"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_group_size, 32);
  c = Parse({"--model=llama3-8b", "--group-size=-1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_group_size, -1);
  c = Parse({"--model=llama3-8b", "--tunings=default,/tmp/a.json"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model_tunings,
            (std::vector<std::string>{"default", "/tmp/a.json"}));
  // One copy of the model per mode and tuning.
  EXPECT_EQ(EstimateModelMemory(*c, *FindPreset("llama3-8b"), 0).copies,
            2 * static_cast<int64_t>(c->modes.size()));

  EXPECT_EQ(FindPreset("llama3-70b-tp4")->num_layers, 80);
  EXPECT_EQ(FindPreset("qwen2.5-7b")->num_layers, 28);
}

TEST(BenchModelConfig, BadValuesAreNamed) {
  const struct {
    std::vector<const char*> args;
    const char* message;
  } cases[] = {
      {{"--model=gpt5"}, "--model: unknown 'gpt5'"},
      {{"--model=llama3-8b", "--layers=33"},
       "--layers: 33 is more than llama3-8b's 32"},
      {{"--model=llama3-8b", "--layers=0"}, "--layers: '0' is not a positive"},
      {{"--model=llama3-8b", "--layers=x"}, "--layers: 'x'"},
      {{"--layers=2"}, "--model is required"},
      {{"--model=llama3-8b", "--group-size=0"},
       "--group-size: want a positive group or -1, got '0'"},
      {{"--model=llama3-8b", "--group-size=48"},
       "--group-size: 48 does not divide K = 4096 of llama3-8b's qkv"},
      {{"--model=llama3-8b", "--steps=0"}, "--steps: '0' is not a positive"},
      {{"--model=llama3-8b", "--epilogues=some"}, "--epilogues: 'some'"},
      {{"--model=llama3-8b", "--prefill-m=0"}, "--prefill-m"},
      {{"--model=llama3-8b", "--prefetch=100"}, "--prefetch: '100'"},
      {{"--model=llama3-8b", "--hugepages=yes"}, "--hugepages: 'yes'"},
      {{"--model=llama3-8b", "--tunings=a.json,"}, "--tunings: an empty"},
      {{"--model=llama3-8b", "--prefetch=0", "--tunings=a.json"},
       "--prefetch excludes --tunings"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<ModelOptions> r = Parse(c.args);
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status().message();
  }
  EXPECT_NE(BenchUsage("model").find("--model=NAME"), std::string::npos);
  EXPECT_NE(BenchUsage("model").find("--layers=L"), std::string::npos);
}

TEST(BenchModelMemory, ParsesMemAvailable) {
  absl::StatusOr<int64_t> v = ParseMemAvailable(
      "MemTotal:       24000000 kB\nMemFree:  100 kB\n"
      "MemAvailable:   23647128 kB\nBuffers: 1 kB\n");
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(*v, int64_t{23647128} * 1024);
  EXPECT_FALSE(ParseMemAvailable("MemTotal: 1 kB\n").ok());
  EXPECT_FALSE(ParseMemAvailable("MemAvailable: lots kB\n").ok());
  absl::StatusOr<int64_t> here = MemAvailableBytes();
  ASSERT_TRUE(here.ok()) << here.status();
  EXPECT_GT(*here, 0);
}

// The estimate bounds what a layer really holds, in both modes and both
// weight types, and is not far above it.
TEST(BenchModelMemory, EstimateBoundsPackedBytes) {
  for (WeightType wt : {WeightType::kS4, WeightType::kU4}) {
    for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
      for (const LayerShape& shape : {LayerShape{"a", 512, 1024, 128, false},
                                      LayerShape{"b", 384, 2048, 128, true},
                                      LayerShape{"c", 256, 512, -1, false}}) {
        const LayerDesc desc = BenchDesc(shape, mode, wt);
        const internal::CanonicalWeights w = BenchWeights(desc, 7);
        absl::StatusOr<internal::OwnedCheckpoint> ckpt =
            internal::ExportWeights(desc, w, WeightFormat::kUnpackedInt8);
        ASSERT_TRUE(ckpt.ok());
        absl::StatusOr<std::unique_ptr<Layer>> layer =
            Layer::Create(desc, ckpt->view());
        ASSERT_TRUE(layer.ok()) << layer.status();
        const int64_t actual = static_cast<int64_t>((*layer)->packed_bytes());
        const int64_t estimate = EstimatePackedBytes(shape, wt);
        EXPECT_GE(estimate, actual) << shape.name << " " << ToString(mode);
        EXPECT_LE(estimate, actual * 5 / 4)
            << shape.name << " " << ToString(mode);
      }
    }
  }
}

TEST(BenchModelMemory, CheckNamesBytesNeededAndAvailable) {
  absl::StatusOr<ModelOptions> c = Parse({"--model=llama3-8b"});
  ASSERT_TRUE(c.ok());
  const ModelMemory need =
      EstimateModelMemory(*c, *FindPreset("llama3-8b"), int64_t{1} << 30);
  // 218 M weights per decoder layer, two modes: ~2 x 116 MB per layer.
  EXPECT_GT(need.per_layer_bytes, 2 * 109000000);
  EXPECT_LT(need.per_layer_bytes, 2 * 130000000);
  EXPECT_EQ(need.packed_bytes, need.per_layer_bytes * 32);
  // A copy per --prefetch distance and --hugepages setting.
  ModelOptions copies = *c;
  copies.model_prefetch = {0, 512, 1024};
  copies.model_huge_pages = {false, true};
  EXPECT_EQ(
      EstimateModelMemory(copies, *FindPreset("llama3-8b"), 0).per_layer_bytes,
      6 * need.per_layer_bytes);
  // And per --tunings file.
  ModelOptions tunings = *c;
  tunings.model_tunings = {"default", "a.json"};
  EXPECT_EQ(
      EstimateModelMemory(tunings, *FindPreset("llama3-8b"), 0).per_layer_bytes,
      2 * need.per_layer_bytes);
  EXPECT_EQ(need.read_buffer_bytes, int64_t{1} << 30);
  EXPECT_GT(need.scratch_bytes, 2 * 28672 * 4096);
  EXPECT_TRUE(CheckModelMemory(*c, need, need.total()).ok());

  const int64_t available = need.read_buffer_bytes + need.scratch_bytes +
                            5 * need.per_layer_bytes + 1;
  const absl::Status s = CheckModelMemory(*c, need, available);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(s.message());
  EXPECT_NE(msg.find(absl::StrCat("needs ", need.total(), " bytes")),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find(absl::StrCat("MemAvailable is ", available, " bytes")),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("--layers=5 fits"), std::string::npos) << msg;
  EXPECT_NE(msg.find("32 layers in 2 mode(s)"), std::string::npos) << msg;
  EXPECT_NE(CheckModelMemory(*c, need, 1000)
                .message()
                .find("not even one layer fits"),
            std::string::npos);
}

ModelRow SampleModelRow(const char* impl, int64_t m, double ms) {
  ModelRow r;
  r.impl = impl;
  r.model = "llama3-8b";
  r.layers = 32;
  r.variant = "fused";
  r.step = "decode";
  r.m = m;
  r.calls = 128;
  r.weight_bytes = 4000000000;
  TimingResult step;
  step.samples = 10;
  step.median_us = ms * 1e3;
  step.min_us = ms * 0.8e3;
  step.p90_us = ms * 1.2e3;
  TimingResult read;
  read.samples = 10;
  read.median_us = 50e3;  // 2 GB in 50 ms: 40 GB/s
  read.min_us = 40e3;     // 50 GB/s
  read.p90_us = 44e3;
  FillModelRowFigures(step, read, 2e9, &r);
  return r;
}

TEST(BenchModelReport, FiguresFromStepAndReadTimings) {
  const ModelRow r = SampleModelRow(kImplW4a16, 4, 125.0);
  EXPECT_EQ(r.samples, 10);
  EXPECT_DOUBLE_EQ(r.time_ms, 125.0);
  EXPECT_DOUBLE_EQ(r.min_ms, 100.0);
  EXPECT_DOUBLE_EQ(r.p90_ms, 150.0);
  EXPECT_DOUBLE_EQ(r.read_gbps, 40.0);
  EXPECT_DOUBLE_EQ(r.read_gbps_best, 50.0);
  EXPECT_DOUBLE_EQ(r.read_tail, 1.1);
  // tokens/s and the shares of the read: tests/python/test_report.py.
}

TEST(BenchModelReport, TableAndJsonCarryEveryColumn) {
  BenchReport report;
  report.preset = report.model = "llama3-8b";
  report.model_read_bytes = int64_t{1} << 30;
  report.model_rows.push_back(SampleModelRow(kImplW4a16, 1, 100.0));
  report.model_rows.push_back(SampleModelRow(kImplDa8w4, 16, 200.0));
  ModelRow failed = SampleModelRow(kImplDa8w4, 8, 1.0);
  failed.status = RowStatus::kError;
  failed.note = "no memory, at all";
  report.model_rows.push_back(failed);
  LayerInfo info;
  info.impl = kImplW4a16;
  info.layer = "qkv";
  info.packed_bytes = 123;
  report.model_layers.push_back(info);

  const std::string text = Squeezed(FormatReport(report));
  for (const char* s : {"== model llama3-8b", "p50(ms) min(ms) p90(ms)",
                        "error no memory, at all"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
  // W4A16 M = 1: 100 ms p50, 80 min, 120 p90.
  EXPECT_NE(text.find("w4a16 fused decode step - 1 100.0 80.0 120.0"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("roofline:"), std::string::npos);

  const nlohmann::json doc = nlohmann::json::parse(ToJson(report));
  ASSERT_TRUE(doc["model"].is_object());
  EXPECT_EQ(doc["model"]["name"], "llama3-8b");
  EXPECT_EQ(doc["model"]["read_bytes"], int64_t{1} << 30);
  ASSERT_EQ(doc["model"]["rows"].size(), 3u);
  EXPECT_EQ(doc["model"]["layers"][0]["packed_bytes"], 123);
  const nlohmann::json& row = doc["model"]["rows"][1];
  EXPECT_EQ(row["impl"], "da8w4");
  EXPECT_EQ(row["m"], 16);
  EXPECT_DOUBLE_EQ(row["time_ms"].get<double>(), 200.0);
  EXPECT_DOUBLE_EQ(row["read_gbps"].get<double>(), 40.0);
  EXPECT_EQ(doc["any_failed"], true);
  // Without the section, "model" is null.
  EXPECT_TRUE(nlohmann::json::parse(ToJson(BenchReport{}))["model"].is_null());
}

}  // namespace
}  // namespace w4jit::perf
