// The engine of `w4jit selftest` (check/selftest.h): reproducer lines parse
// back to the same case, bad ones are named, and a short run covers every
// supported tier and both modes without failures.
#include "check/selftest.h"

#include <algorithm>
#include <random>

#include "check/moe_selftest.h"
#include "gtest/gtest.h"
#include "w4jit/parallel.hpp"

namespace w4jit::check {
namespace {

TEST(SelftestTest, CaseTextRoundTrips) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 200; ++i) {
    const Case c =
        RandomCase(&rng, internal::IsaTier::kRef, 4, SelftestBackends());
    const std::string text = CaseToString(c);
    absl::StatusOr<Case> back = ParseCase(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(CaseToString(*back), text);
  }
}

TEST(SelftestTest, MoeCaseTextRoundTrips) {
  std::mt19937_64 rng(6);
  for (int i = 0; i < 200; ++i) {
    const MoeCase c =
        RandomMoeCase(&rng, internal::IsaTier::kRef, 4, SelftestBackends());
    const std::string text = MoeCaseToString(c);
    EXPECT_TRUE(IsMoeCaseText(text)) << text;
    EXPECT_FALSE(IsMoeCaseText(CaseToString(Case{})));
    absl::StatusOr<MoeCase> back = ParseMoeCase(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status();
    EXPECT_EQ(MoeCaseToString(*back), text);
  }
}

TEST(SelftestTest, BadMoeCaseTextIsNamed) {
  absl::StatusOr<MoeCase> c = ParseMoeCase("moe=1,experts=4,colour=blue");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("colour"), absl::string_view::npos);
  c = ParseMoeCase("moe=1,gate=relu");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("gate=relu"), absl::string_view::npos);
  c = ParseMoeCase("moe=1,experts=2,hidden=8,inter=8,k=3");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("k = 3 is more than experts = 2"),
            absl::string_view::npos);
  c = ParseMoeCase("isa=ref,experts=2");
  ASSERT_FALSE(c.ok());
}

// A MoE case with every switch on runs and agrees with the oracle; one
// that cannot be built fails with the reason.
TEST(SelftestTest, MoeCasesRunOrNameWhyNot) {
  absl::StatusOr<MoeCase> c = ParseMoeCase(
      "moe=1,isa=ref,mode=da8w4,act_quant=per_group,experts=5,hidden=64,"
      "inter=48,group=16,weights=u4,format=gptq-v1,stacked=1,scales=bf16,"
      "act=bf16,out=f32,gate=gelu_tanh,w13_bias=1,w2_bias=1,bias=bf16,t=9,"
      "k=3,skewed=1,accumulate=1,ldx=70,ldy=66,threads=2,backend=host");
  ASSERT_TRUE(c.ok()) << c.status();
  CaseResult r = RunMoeCase(*c);
  EXPECT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.worst_ratio, 0.0);
  // AWQ packs N = 2I by eights: I = 6 cannot be exported.
  c = ParseMoeCase(
      "moe=1,isa=ref,experts=2,hidden=16,inter=6,group=-1,format=awq-gemm");
  ASSERT_TRUE(c.ok()) << c.status();
  r = RunMoeCase(*c);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("checkpoint"), std::string::npos) << r.error;
  SetParallelBackend(nullptr);
  SetNumThreads(0);
}

TEST(SelftestTest, BadCaseTextIsNamed) {
  absl::StatusOr<Case> c = ParseCase("isa=ref,n=8,colour=blue");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("colour"), absl::string_view::npos);
  c = ParseCase("format=safetensors");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("format=safetensors"),
            absl::string_view::npos);
  c = ParseCase("backend=tbb");
  ASSERT_FALSE(c.ok());
}

TEST(SelftestTest, ACaseThatCannotBeBuiltFails) {
  // AWQ packs N in eights: N = 7 cannot be exported.
  absl::StatusOr<Case> c = ParseCase(
      "isa=ref,mode=w4a16,n=7,k=16,group=8,weights=s4,format=awq-gemm,m=1");
  ASSERT_TRUE(c.ok()) << c.status();
  const CaseResult r = RunCase(*c);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("export"), std::string::npos) << r.error;
}

// Every backend the build has is drawn from, and a case on each runs: the
// OpenMP one only where setting it succeeds (a build with OpenMP).
TEST(SelftestTest, EveryAvailableBackendRunsACase) {
  const std::vector<std::string> backends = SelftestBackends();
  const ThreadingBackend before = GetThreadingBackend();
  const bool have_omp = SetThreadingBackend(ThreadingBackend::kOpenMP).ok();
  ASSERT_TRUE(SetThreadingBackend(before).ok());
  EXPECT_EQ(std::count(backends.begin(), backends.end(), "omp"),
            have_omp ? 1 : 0);
  for (const std::string& b : backends) {
    absl::StatusOr<Case> c = ParseCase(
        "isa=ref,mode=da8w4,n=40,k=64,group=32,weights=s4,m=5,threads=2,"
        "backend=" +
        b);
    ASSERT_TRUE(c.ok()) << c.status();
    const CaseResult r = RunCase(*c);
    EXPECT_TRUE(r.ok) << b << ": " << r.error;
  }
  SetParallelBackend(nullptr);
  ASSERT_TRUE(SetThreadingBackend(before).ok());
  SetNumThreads(0);
}

TEST(SelftestTest, ShortRunCoversEveryTierAndModeWithoutFailures) {
  SelftestOptions options;
  options.configs_per_tier = 60;
  options.seconds = 120;
  options.seed = 7;
  int64_t calls = 0;
  const SelftestReport report =
      RunSelftest(options, [&](const Progress&) { ++calls; });
  const auto tiers = SupportedTiers();
  // Per tier: linear and MoE layers, each in both modes.
  ASSERT_EQ(report.stats.size(), 4 * tiers.size());
  int64_t total = 0, moe = 0;
  for (const TierModeStats& s : report.stats) {
    EXPECT_EQ(s.failed, 0);
    if (s.moe) {
      moe += s.configs;
    } else {
      EXPECT_GT(s.configs, 0) << internal::ToString(s.tier);
      if (s.tier != internal::IsaTier::kRef) {
        EXPECT_GT(s.on_jit, 0);
      }
    }
    total += s.configs;
  }
  EXPECT_EQ(moe, 60 / kMoeEvery * static_cast<int64_t>(tiers.size()));
  EXPECT_EQ(total, 60 * static_cast<int64_t>(tiers.size()));
  EXPECT_EQ(calls, total);
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace w4jit::check
