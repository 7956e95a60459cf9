// The bench refuses to report a wrong kernel: each implementation's output
// is checked against the reference before it is timed, and a wrong one
// becomes a FAILED row with the reason and no figures.
#include <cstring>
#include <memory>
#include <vector>

#include "base/numeric.h"
#include "gtest/gtest.h"
#include "perf/lib/output_check.h"
#include "perf/lib/timing/checked_timing.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::perf {
namespace {

TimingOptions Fast() {
  TimingOptions o;
  o.min_reps = 3;
  o.min_time_s = 0.0;
  o.settle_s = 0.0;
  return o;
}

LayerDesc Desc(Mode mode, WeightType type, DType out) {
  LayerDesc d;
  d.n = 40;
  d.k = 128;
  d.group_size = 32;
  d.weight_type = type;
  d.mode = mode;
  d.act_dtype = DType::kBF16;
  d.out_dtype = out;
  d.has_bias = true;
  return d;
}

// A layer, its weights, activations and an output buffer, as the bench
// wires them.
struct Case {
  LayerDesc desc;
  internal::CanonicalWeights w;
  std::unique_ptr<Layer> layer;
  std::vector<uint8_t> x;
  std::vector<uint8_t> y;
  int64_t m;

  Case(const LayerDesc& d, int64_t rows) : desc(d), m(rows) {
    w = testing::RandomWeights(desc, 7);
    auto made = testing::MakeLayer(desc, w);
    EXPECT_TRUE(made.ok()) << made.status();
    if (made.ok()) layer = *std::move(made);
    x = testing::RandomActivations(desc, m, desc.k, 8);
    y.resize(m * desc.n * internal::DTypeSize(desc.out_dtype));
  }
  absl::Status Run() {
    return layer->Run(m, x.data(), desc.k, y.data(), desc.n);
  }
  absl::Status Check() {
    return CheckLayerOutput(desc, w, m, x.data(), desc.k, y.data(), desc.n);
  }
  // Adds `delta` to output element (row, col).
  void Perturb(int64_t row, int64_t col, float delta) {
    const int64_t i = row * desc.n + col;
    const float v = internal::LoadAsF32(y.data(), desc.out_dtype, i);
    internal::StoreFromF32(y.data(), desc.out_dtype, i, v + delta);
  }
};

BenchRow Shape() {
  BenchRow r;
  r.layer = "test";
  r.n = 40;
  r.k = 128;
  r.m = 3;
  return r;
}

TEST(BenchCheck, CorrectLayersPassForBothModesAndOutputTypes) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      for (DType out : {DType::kF32, DType::kBF16}) {
        Case c(Desc(mode, type, out), 3);
        ASSERT_TRUE(c.Run().ok());
        EXPECT_TRUE(c.Check().ok()) << c.Check();
      }
    }
  }
}

TEST(BenchCheck, OneWrongOutputIsCaughtAndNamed) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    Case c(Desc(mode, WeightType::kS4, DType::kF32), 3);
    ASSERT_TRUE(c.Run().ok());
    // The last column of the last row: a kernel's tail.
    c.Perturb(2, 39, 0.5f);
    const absl::Status s = c.Check();
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("y[2, 39]"), std::string::npos) << s;
  }
}

TEST(BenchCheck, WrongKernelIsFailedAndNeverTimed) {
  Case good(Desc(Mode::kDA8W4, WeightType::kS4, DType::kBF16), 3);
  Case bad(Desc(Mode::kW4A16, WeightType::kS4, DType::kBF16), 3);
  int bad_calls = 0, good_calls = 0;
  std::vector<Contestant> contestants(3);
  contestants[0].impl = kImplDa8w4;
  contestants[0].run = [&] {
    ++good_calls;
    return good.Run();
  };
  contestants[0].verify = [&] { return good.Check(); };
  // The injected wrong kernel: the real layer, then one output corrupted.
  contestants[1].impl = kImplW4a16;
  contestants[1].kernel = "injected_wrong_kernel";
  contestants[1].run = [&] {
    ++bad_calls;
    absl::Status s = bad.Run();
    bad.Perturb(1, 17, 1.0f);
    return s;
  };
  contestants[1].verify = [&] { return bad.Check(); };
  // A peer without oracle is timed as is.
  contestants[2].impl = kImplOneDnnU8s8;
  contestants[2].run = [] { return absl::OkStatus(); };

  const std::vector<BenchRow> rows =
      TimeCheckedContestants(Shape(), contestants, Fast());
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].status, RowStatus::kOk);
  EXPECT_GE(rows[0].samples, 3);
  EXPECT_GT(good_calls, 3);

  EXPECT_EQ(rows[1].status, RowStatus::kFailed);
  EXPECT_EQ(rows[1].kernel, "injected_wrong_kernel");
  EXPECT_NE(rows[1].note.find("wrong output, not timed"), std::string::npos);
  EXPECT_NE(rows[1].note.find("y[1, 17]"), std::string::npos) << rows[1].note;
  EXPECT_EQ(bad_calls, 1);  // checked once, never timed
  EXPECT_EQ(rows[1].samples, 0);
  EXPECT_EQ(rows[1].time_us, 0.0);

  EXPECT_EQ(rows[2].status, RowStatus::kOk);
  EXPECT_EQ(rows[2].m, 3);
  EXPECT_EQ(rows[2].layer, "test");
}

TEST(BenchCheck, OracleCallableDecidesTheVerdict) {
  std::vector<Contestant> c(2);
  c[0].impl = "always_wrong";
  c[0].run = [] { return absl::OkStatus(); };
  c[0].verify = [] { return absl::InternalError("differs from oracle"); };
  c[1].impl = "fails_to_run";
  c[1].run = [] { return absl::InvalidArgumentError("bad shape"); };
  c[1].verify = [] { return absl::OkStatus(); };
  const std::vector<BenchRow> rows = TimeCheckedContestants(Shape(), c, Fast());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].status, RowStatus::kFailed);
  EXPECT_NE(rows[0].note.find("differs from oracle"), std::string::npos);
  EXPECT_EQ(rows[1].status, RowStatus::kError);
  EXPECT_NE(rows[1].note.find("bad shape"), std::string::npos);
}

TEST(BenchCheck, UnavailableContestantIsReportedWithItsNote) {
  std::vector<Contestant> c(1);
  c[0].impl = kImplOneDnnBf16;
  c[0].unavailable = RowStatus::kNotAvailable;
  c[0].unavailable_note = "n/a (oneDNN: unimplemented on this ISA)";
  const std::vector<BenchRow> rows = TimeCheckedContestants(Shape(), c, Fast());
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, RowStatus::kNotAvailable);
  EXPECT_EQ(rows[0].note, c[0].unavailable_note);
}

}  // namespace
}  // namespace w4jit::perf
