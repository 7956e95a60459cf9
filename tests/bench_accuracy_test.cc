// The --accuracy section of `w4jit bench`: its options, its table, and
// bench.json's "accuracy" array; and
// one small run of the section itself.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "perf/lib/report/report_files.h"
#include "perf/lib/report/report_table.h"
#include "perf/lib/sections/accuracy_bench.h"
#include "tests/bench_parse.h"
#include "tests/bench_sample_report.h"

namespace w4jit::perf {
namespace {

const char kAccuracyHeader[] =
    "impl,layer,n,k,group_size,m,act_quant,status,outliers,outlier_scale,"
    "rel_error,samples,p50_us,min_us,note";

BenchReport WithAccuracy() {
  BenchReport r = SampleReport();
  AccuracyRow row;
  row.impl = kImplW4a16;
  row.layer = "o_proj";
  row.n = row.k = 4096;
  row.group_size = 128;
  row.m = 16;
  row.outliers = 8;
  row.outlier_scale = 50;
  row.rel_error = 0.002;
  row.samples = 20;
  row.p50_us = 2000;
  row.min_us = 1800;
  r.accuracy.push_back(row);
  row.impl = kImplDa8w4;
  row.act_quant = "per_token";
  row.rel_error = 0.08;
  row.p50_us = 1000;
  row.min_us = 900;
  r.accuracy.push_back(row);
  row.act_quant = "per_group";
  row.status = RowStatus::kFailed;
  row.note = "y[0; 1] wrong";
  r.accuracy.push_back(row);
  return r;
}

TEST(BenchAccuracy, TheJobsOptions) {
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "accuracy");
    return ParseJob<AccuracyOptions>(std::move(args));
  };
  auto plain = parse({});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->outliers, 8);
  EXPECT_EQ(plain->outlier_scale, 50.0f);
  EXPECT_EQ(plain->accuracy_rows, 16);
  auto tuned = parse({"--outliers=4", "--outlier-scale=20", "--rows", "3"});
  ASSERT_TRUE(tuned.ok()) << tuned.status();
  EXPECT_EQ(tuned->outliers, 4);
  EXPECT_EQ(tuned->outlier_scale, 20.0f);
  EXPECT_EQ(tuned->accuracy_rows, 3);
  EXPECT_FALSE(parse({"--outliers=-1"}).ok());
  EXPECT_FALSE(parse({"--rows=0"}).ok());
  EXPECT_NE(BenchUsage("accuracy").find("--outlier-scale"), std::string::npos);
}

TEST(BenchAccuracy, JsonHasEveryField) {
  const BenchReport r = WithAccuracy();
  const nlohmann::json j = nlohmann::json::parse(ToJson(r));
  ASSERT_EQ(j["accuracy"].size(), 3u);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j["accuracy"][0].items()) {
    keys.push_back(key);
  }
  std::vector<std::string> expected = absl::StrSplit(kAccuracyHeader, ',');
  std::sort(expected.begin(), expected.end());  // nlohmann sorts keys
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(j["accuracy"][1]["rel_error"], 0.08);
  EXPECT_EQ(j["any_failed"], true);
  const nlohmann::json none = nlohmann::json::parse(ToJson(SampleReport()));
  EXPECT_EQ(none["accuracy"], nlohmann::json::array());
}

TEST(BenchAccuracy, TableShowsErrorAndSpeed) {
  const std::string text = FormatReport(WithAccuracy());
  for (const char* needle :
       {"== accuracy", "per_token", "8.00e-02", "FAILED"}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
  }
}

// A small layer through the whole section: three rows per M, every one
// checked and timed, per group far more accurate than per token.
TEST(BenchAccuracy, RunsAndMeasures) {
  auto config =
      ParseJob<AccuracyOptions>({"accuracy", "--shape=32,4096,128", "--m=1,3",
                                 "--reps=2", "--min-time=0", "--budget=0.05"});
  ASSERT_TRUE(config.ok()) << config.status();
  BenchReport report;
  ASSERT_TRUE(RunAccuracy(
                  *config, [](const std::string&) {}, &report)
                  .ok());
  ASSERT_EQ(report.accuracy.size(), 6u);
  for (const AccuracyRow& row : report.accuracy) {
    EXPECT_TRUE(row.ok()) << row.note;
    EXPECT_GT(row.samples, 0);
    EXPECT_GT(row.rel_error, 0.0);
  }
  const AccuracyRow& w4a16 = report.accuracy[0];
  const AccuracyRow& token = report.accuracy[1];
  const AccuracyRow& group = report.accuracy[2];
  EXPECT_EQ(token.act_quant, "per_token");
  EXPECT_EQ(group.act_quant, "per_group");
  EXPECT_LT(group.rel_error * 3, token.rel_error);
  EXPECT_LT(w4a16.rel_error, group.rel_error);
}

}  // namespace
}  // namespace w4jit::perf
