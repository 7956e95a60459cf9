// Tuning files: every kind of bad input is a clear message and the
// defaults stay in force; a good file applies to its own CPU class only.
#include "dispatch/tuning.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "w4jit/tuning.hpp"

namespace w4jit::internal {
namespace {

std::string HostClass() { return CpuClassOf(HostCpu(), ActiveIsa()); }

std::string GoodJson(const std::string& cpu_class) {
  return R"({"w4jit_tuning_version": 1,
             "cpu": {"class": ")" +
         cpu_class + R"(", "name": "test"},
             "created": "2026-12-02",
             "entries": [{"mode": "da8w4", "n": 4096, "k": 4096,
                          "group_size": 128,
                          "params": {"gemm.mr": 4, "handover_m": 8}}]})";
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

LayerDesc Desc4096() {
  LayerDesc d;
  d.n = 4096;
  d.k = 4096;
  d.group_size = 128;
  d.mode = Mode::kDA8W4;
  return d;
}

class TuningTest : public ::testing::Test {
 protected:
  void TearDown() override { ASSERT_TRUE(LoadTuningFile("").ok()); }
};

TEST_F(TuningTest, ParsesAndRoundTrips) {
  auto file = ParseTuningJson(GoodJson("zen3/avx2"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->cpu_class, "zen3/avx2");
  ASSERT_EQ(file->entries.size(), 1u);
  EXPECT_EQ(file->entries[0].params.at("gemm.mr"), 4);
  auto again = ParseTuningJson(TuningToJson(*file));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->entries[0].params, file->entries[0].params);
  EXPECT_EQ(again->entries[0].group_size, 128);
}

struct BadCase {
  const char* name;
  std::string text;
  const char* expect_in_message;
};

TEST_F(TuningTest, BadFilesAreRefusedWithAReason) {
  const std::string good = GoodJson("zen3/avx2");
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const BadCase cases[] = {
      {"malformed", "{\"w4jit_tuning_version\": 1, ", "not valid JSON"},
      {"array", "[1, 2]", "not an object"},
      {"version",
       replace("\"w4jit_tuning_version\": 1", "\"w4jit_tuning_version\": 9"),
       "w4jit_tuning_version"},
      {"unknown top key", replace("\"created\"", "\"colour\": 1, \"created\""),
       "unknown key \"colour\""},
      {"unknown entry key", replace("\"params\"", "\"speed\": 3, \"params\""),
       "unknown key \"speed\""},
      {"negative n", replace("\"n\": 4096", "\"n\": -4096"),
       "must be positive"},
      {"zero k", replace("\"k\": 4096", "\"k\": 0"), "must be positive"},
      {"bad group", replace("\"group_size\": 128", "\"group_size\": -5"),
       "group_size"},
      {"negative param", replace("\"gemm.mr\": 4", "\"gemm.mr\": -4"),
       "non-negative"},
      {"string param", replace("\"gemm.mr\": 4", "\"gemm.mr\": \"4\""),
       "non-negative integer"},
      {"bad mode", replace("\"da8w4\"", "\"int3\""), "int3"},
      {"bad shape", replace("\"n\": 4096", "\"shape\": \"some\", \"n\": 4096"),
       "\"shape\" must be \"all\""},
      {"shape all with n",
       replace("\"n\": 4096", "\"shape\": \"all\", \"n\": 4096"),
       "\"n\" with \"shape\": \"all\""},
  };
  for (const BadCase& c : cases) {
    auto parsed = ParseTuningJson(c.text);
    ASSERT_FALSE(parsed.ok()) << c.name;
    EXPECT_NE(parsed.status().message().find(c.expect_in_message),
              std::string::npos)
        << c.name << ": " << parsed.status();
    // Loading it keeps the defaults.
    const std::string path = WriteTemp("bad_tuning.json", c.text);
    EXPECT_FALSE(w4jit::LoadTuningFile(path).ok()) << c.name;
    EXPECT_FALSE(LookupTuning(HostCpu(), ActiveIsa(), Desc4096()).has_value());
    EXPECT_NE(ActiveTuning().status, "applied");
  }
}

TEST_F(TuningTest, FileOfAnotherCpuIsNotApplied) {
  const std::string path =
      WriteTemp("other_cpu.json", GoodJson("some-other-cpu/avx512_bf16"));
  absl::Status s = w4jit::LoadTuningFile(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("some-other-cpu"), std::string::npos) << s;
  EXPECT_NE(s.message().find(HostClass()), std::string::npos) << s;
  EXPECT_FALSE(LookupTuning(HostCpu(), ActiveIsa(), Desc4096()).has_value());
}

TEST_F(TuningTest, UnreadableFileIsAnError) {
  EXPECT_FALSE(w4jit::LoadTuningFile("/nonexistent/tuning.json").ok());
  EXPECT_EQ(ActiveTuning().status, "cannot be read");
}

TEST_F(TuningTest, FileOfThisCpuAppliesToMatchingShapesOnly) {
  const std::string path = WriteTemp("this_cpu.json", GoodJson(HostClass()));
  ASSERT_TRUE(w4jit::LoadTuningFile(path).ok());
  EXPECT_EQ(ActiveTuning().status, "applied");
  auto params = LookupTuning(HostCpu(), ActiveIsa(), Desc4096());
  ASSERT_TRUE(params.has_value());
  EXPECT_EQ(params->at("handover_m"), 8);
  LayerDesc other = Desc4096();
  other.k = 14336;
  EXPECT_FALSE(LookupTuning(HostCpu(), ActiveIsa(), other).has_value());
  other = Desc4096();
  other.mode = Mode::kW4A16;
  EXPECT_FALSE(LookupTuning(HostCpu(), ActiveIsa(), other).has_value());
}

// An all-shapes entry reaches every layer of its mode (a MoE layer's expert
// panels included, whose shapes no file lists); an exact shape's entry
// overrides it parameter by parameter; the other mode is untouched.
TEST_F(TuningTest, AllShapesEntryAppliesToEveryShapeOfItsMode) {
  const std::string text = R"({"w4jit_tuning_version": 1,
      "cpu": {"class": ")" +
                           HostClass() +
                           R"("}, "created": "2026-12-05",
      "entries": [
        {"mode": "da8w4", "shape": "all",
         "params": {"prefetch_distance": 4096, "handover_m": 16}},
        {"mode": "da8w4", "n": 4096, "k": 4096, "group_size": 128,
         "params": {"handover_m": 8}}]})";
  auto parsed = ParseTuningJson(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_TRUE(parsed->entries[0].all_shapes);
  auto again = ParseTuningJson(TuningToJson(*parsed));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->entries[0].all_shapes);
  EXPECT_FALSE(again->entries[1].all_shapes);
  const std::string path = WriteTemp("all.json", text);
  ASSERT_TRUE(w4jit::LoadTuningFile(path).ok());
  std::remove(path.c_str());
  auto exact = LookupTuning(HostCpu(), ActiveIsa(), Desc4096());
  ASSERT_TRUE(exact.has_value());
  EXPECT_EQ(exact->at("handover_m"), 8);
  EXPECT_EQ(exact->at("prefetch_distance"), 4096);
  LayerDesc panel = Desc4096();
  panel.n = 96;  // a shape no entry names
  panel.k = 2880;
  auto any = LookupTuning(HostCpu(), ActiveIsa(), panel);
  ASSERT_TRUE(any.has_value());
  EXPECT_EQ(any->at("handover_m"), 16);
  panel.mode = Mode::kW4A16;
  EXPECT_FALSE(LookupTuning(HostCpu(), ActiveIsa(), panel).has_value());
}

TEST(CpuClassTest, NamesGenerationsAndTier) {
  CpuFeatures f;
  f.avx2 = f.fma = true;
  EXPECT_EQ(
      CpuClassOf(ClassifyCpu(Vendor::kAmd, 0x00A00F11, f), IsaTier::kAvx2),
      "zen3/avx2");
  f.avx512f = f.avx512bw = f.avx512vl = f.avx512dq = f.avx512vnni = true;
  f.avx512bf16 = true;
  EXPECT_EQ(CpuClassOf(ClassifyCpu(Vendor::kAmd, 0x00A10F11, f),
                       IsaTier::kAvx512Bf16),
            "zen4/avx512_bf16");
  EXPECT_EQ(CpuClassOf(ClassifyCpu(Vendor::kIntel, 0x000806F8, f),
                       IsaTier::kAvx512Bf16),
            "intel-avx512/avx512_bf16");
  f.fp256 = true;
  EXPECT_EQ(
      CpuClassOf(ClassifyCpu(Vendor::kAmd, 0x00B20F40, f), IsaTier::kAvx2),
      "zen5-fp256/avx2");
}

}  // namespace
}  // namespace w4jit::internal
