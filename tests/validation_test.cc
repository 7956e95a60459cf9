// Every bad input to Layer::Create and Layer::Run is an InvalidArgument
// whose message names the bad value, and a failed Run writes nothing.
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/formats/import.h"
#include "tests/util/test_layer.h"
#include "w4jit/layer.hpp"

namespace w4jit {
namespace {

LayerDesc GoodDesc(WeightType type = WeightType::kU4) {
  LayerDesc d;
  d.n = 16;
  d.k = 64;
  d.group_size = 32;
  d.weight_type = type;
  d.scale_dtype = DType::kBF16;
  d.act_dtype = DType::kBF16;
  d.out_dtype = DType::kBF16;
  d.has_bias = true;
  d.bias_dtype = DType::kF32;
  return d;
}

// Buffers big enough for any of the small layers below, in any format.
struct Buffers {
  std::vector<uint8_t> qweight = std::vector<uint8_t>(1 << 14);
  std::vector<uint8_t> scales = std::vector<uint8_t>(1 << 12);
  std::vector<uint8_t> zeros = std::vector<uint8_t>(1 << 12);
  std::vector<uint8_t> bias = std::vector<uint8_t>(1 << 10);
  WeightsView View(const LayerDesc& d) const {
    WeightsView v;
    v.qweight = qweight.data();
    v.scales = scales.data();
    if (d.weight_type == WeightType::kU4) v.zero_points = zeros.data();
    if (d.has_bias) v.bias = bias.data();
    return v;
  }
};

::testing::AssertionResult CreateFails(const LayerDesc& d, const WeightsView& v,
                                       const std::string& text) {
  auto layer = Layer::Create(d, v);
  if (layer.ok()) return ::testing::AssertionFailure() << "created";
  const absl::Status& s = layer.status();
  if (s.code() != absl::StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "wrong code: " << s;
  }
  if (std::string(s.message()).find(text) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "\"" << s.message() << "\" lacks \"" << text << "\"";
  }
  return ::testing::AssertionSuccess();
}

struct DescCase {
  const char* want;
  std::function<void(LayerDesc*)> edit;
};

TEST(Validation, BadDescriptions) {
  const DescCase cases[] = {
      {"group_size = 48 does not divide K = 64",
       [](LayerDesc* d) { d->group_size = 48; }},
      {"group_size = 0 must be positive or -1",
       [](LayerDesc* d) { d->group_size = 0; }},
      {"group_size = -2 must be positive or -1",
       [](LayerDesc* d) { d->group_size = -2; }},
      {"N = 0 must be in", [](LayerDesc* d) { d->n = 0; }},
      {"N = -16 must be in", [](LayerDesc* d) { d->n = -16; }},
      {"K = 0 must be in", [](LayerDesc* d) { d->k = 0; }},
      {"K = -64 must be in", [](LayerDesc* d) { d->k = -64; }},
      {"act_dtype = f16 is not supported",
       [](LayerDesc* d) { d->act_dtype = DType::kF16; }},
      {"out_dtype = f16 is not supported",
       [](LayerDesc* d) { d->out_dtype = DType::kF16; }},
      {"bias_dtype = f16 is not supported",
       [](LayerDesc* d) { d->bias_dtype = DType::kF16; }},
      {"act_dtype = 9 (not a dtype)",
       [](LayerDesc* d) { d->act_dtype = static_cast<DType>(9); }},
      {"out_dtype = -1 (not a dtype)",
       [](LayerDesc* d) { d->out_dtype = static_cast<DType>(-1); }},
      {"scale_dtype = 7",
       [](LayerDesc* d) { d->scale_dtype = static_cast<DType>(7); }},
      {"weight_type = 5",
       [](LayerDesc* d) { d->weight_type = static_cast<WeightType>(5); }},
      {"mode = 7", [](LayerDesc* d) { d->mode = static_cast<Mode>(7); }},
  };
  const Buffers buf;
  for (const DescCase& c : cases) {
    LayerDesc d = GoodDesc();
    const WeightsView v = buf.View(d);  // pointers of the good layer
    c.edit(&d);
    EXPECT_TRUE(CreateFails(d, v, c.want)) << c.want;
  }
}

TEST(Validation, MissingOrExtraPointers) {
  const Buffers buf;
  const LayerDesc u4 = GoodDesc(WeightType::kU4);
  const LayerDesc s4 = GoodDesc(WeightType::kS4);
  WeightsView v = buf.View(u4);
  v.qweight = nullptr;
  EXPECT_TRUE(CreateFails(u4, v, "qweight is null"));
  v = buf.View(u4);
  v.scales = nullptr;
  EXPECT_TRUE(CreateFails(u4, v, "scales is null"));
  v = buf.View(u4);
  v.zero_points = nullptr;
  EXPECT_TRUE(CreateFails(u4, v, "zero_points is null but weight_type is u4"));
  v = buf.View(s4);
  v.zero_points = buf.zeros.data();
  EXPECT_TRUE(CreateFails(s4, v, "zero_points is given but weight_type is s4"));
  v = buf.View(s4);
  v.bias = nullptr;
  EXPECT_TRUE(CreateFails(s4, v, "bias is null but has_bias is true"));
  LayerDesc no_bias = s4;
  no_bias.has_bias = false;
  v = buf.View(s4);
  EXPECT_TRUE(CreateFails(no_bias, v, "bias is given but has_bias is false"));
}

TEST(Validation, FormatSpecificShapeAndValues) {
  const Buffers buf;
  LayerDesc d = GoodDesc(WeightType::kS4);
  d.k = 12;
  d.group_size = -1;
  WeightsView v = buf.View(d);
  v.format = WeightFormat::kZentorchInt32;
  EXPECT_TRUE(CreateFails(d, v, "K = 12 is not a multiple of 8"));
  v.format = WeightFormat::kGptqV2;
  EXPECT_TRUE(CreateFails(d, v, "K = 12 is not a multiple of 8"));

  d = GoodDesc(WeightType::kU4);
  d.n = 20;
  v = buf.View(d);
  v.format = WeightFormat::kAwqGemm;
  EXPECT_TRUE(CreateFails(d, v, "N = 20 is not a multiple of 8"));
  v.format = static_cast<WeightFormat>(11);
  EXPECT_TRUE(CreateFails(d, v, "weights.format = 11"));

  // Unpacked int8 holding an out-of-range value.
  d = GoodDesc(WeightType::kS4);
  auto ckpt = internal::ExportWeights(d, testing::RandomWeights(d, 1),
                                      WeightFormat::kUnpackedInt8);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ckpt->qweight[70] = 9;  // n = 1, k = 6
  EXPECT_TRUE(CreateFails(d, ckpt->view(), "qweight[n = 1, k = 6] = 9"));
}

// Act-order is accepted when every group has group_size members
// (tests/act_order_test.cc), refused with the group's count otherwise.
TEST(Validation, ActOrderGIdxWithUnevenGroupsIsRefused) {
  const LayerDesc d = GoodDesc(WeightType::kU4);
  auto ckpt = internal::ExportWeights(d, testing::RandomWeights(d, 1),
                                      WeightFormat::kGptqV1);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  for (int k = 0; k < d.k; ++k) ckpt->g_idx.push_back((k % 2) ? 1 : 0);
  EXPECT_TRUE(Layer::Create(d, ckpt->view()).ok());
  ckpt->g_idx[0] = 1;
  EXPECT_TRUE(
      CreateFails(d, ckpt->view(), "g_idx gives group 0 31 members, but"));
}

// Run errors leave every byte of y as it was.
TEST(Validation, BadRunArgumentsWriteNothing) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    LayerDesc d = GoodDesc();
    d.mode = mode;
    auto layer = testing::MakeLayer(d, testing::RandomWeights(d, 2));
    ASSERT_TRUE(layer.ok()) << layer.status();
    const int64_t m = 4;
    const auto x = testing::RandomActivations(d, m, d.k, 3);
    std::vector<uint8_t> y(m * (d.n + 8) * 2, 0xA5);
    const std::vector<uint8_t> untouched = y;
    struct Case {
      int64_t m;
      const void* x;
      int64_t ldx;
      void* y;
      int64_t ldy;
      const char* want;
    };
    const Case cases[] = {
        {-3, x.data(), d.k, y.data(), d.n, "M = -3 must not be negative"},
        {-3, nullptr, d.k, nullptr, d.n, "M = -3 must not be negative"},
        {0, x.data(), d.k - 1, y.data(), d.n,
         "ldx = 63 is smaller than K = 64"},
        {m, nullptr, d.k, y.data(), d.n, "x is null"},
        {m, x.data(), d.k, nullptr, d.n, "y is null"},
        {m, x.data(), d.k - 1, y.data(), d.n,
         "ldx = 63 is smaller than K = 64"},
        {m, x.data(), d.k, y.data(), d.n - 1,
         "ldy = 15 is smaller than N = 16"},
        {m, x.data(), d.k, y.data(), int64_t{1} << 62, "overflows"},
    };
    for (const Case& c : cases) {
      const absl::Status s = (*layer)->Run(c.m, c.x, c.ldx, c.y, c.ldy);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.want;
      EXPECT_NE(std::string(s.message()).find(c.want), std::string::npos)
          << s.message() << " lacks " << c.want;
      EXPECT_TRUE(y == untouched) << c.want;
    }
  }
}

// M = 0 is an empty batch: it succeeds, reads no x and writes no y, with
// real buffers or null pointers, on the JIT and the reference path.
TEST(Validation, EmptyBatchIsANoOp) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (bool force_reference : {false, true}) {
      LayerDesc d = GoodDesc();
      d.mode = mode;
      LayerOptions opt;
      opt.force_reference = force_reference;
      const auto w = testing::RandomWeights(d, 2);
      auto layer = testing::MakeLayer(d, w, opt);
      ASSERT_TRUE(layer.ok()) << layer.status();
      SCOPED_TRACE((*layer)->kernel_names().front());
      const auto x = testing::RandomActivations(d, 1, d.k, 3);
      std::vector<uint8_t> y(d.n * 4, 0xA5);
      const std::vector<uint8_t> untouched = y;
      EXPECT_TRUE((*layer)->Run(0, x.data(), d.k, y.data(), d.n).ok());
      EXPECT_TRUE(y == untouched);
      EXPECT_TRUE((*layer)->Run(0, nullptr, d.k, nullptr, d.n).ok());
      EXPECT_TRUE((*layer)->Run(0, nullptr, d.k, y.data(), d.n).ok());
      EXPECT_TRUE((*layer)->Run(0, x.data(), d.k, nullptr, d.n).ok());
      EXPECT_TRUE(y == untouched);
      // The layer still works after an empty batch.
      EXPECT_TRUE(testing::RunAndCheck(**layer, w, 1, x, d.k, d.n));
    }
  }
}

}  // namespace
}  // namespace w4jit
