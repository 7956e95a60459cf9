// Checkpoint formats: hand-packed words (written from
// docs/formats.md, not from our exporter) decode to known values;
// export and import are exact inverses; every format-specific error.
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/numeric.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/formats/common.h"
#include "runtime/formats/import.h"
#include "tests/util/test_layer.h"

namespace w4jit::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using testing::kAllFormats;

LayerDesc Desc(int64_t n, int64_t k, int64_t group_size, WeightType type) {
  LayerDesc d;
  d.n = n;
  d.k = k;
  d.group_size = group_size;
  d.weight_type = type;
  d.scale_dtype = DType::kF32;
  return d;
}

// u[n][*] for one output channel.
std::vector<uint8_t> Row(const CanonicalWeights& w, int64_t n) {
  return {w.u.begin() + n * w.k, w.u.begin() + (n + 1) * w.k};
}

// z[*][g] over all channels for one group.
std::vector<uint8_t> ZerosOfGroup(const CanonicalWeights& w, int64_t g) {
  std::vector<uint8_t> out;
  for (int64_t n = 0; n < w.n; ++n) out.push_back(w.Z(n, g));
  return out;
}

std::vector<float> Iota(int count, float scale) {
  std::vector<float> v(count);
  for (int i = 0; i < count; ++i) v[i] = (i + 1) * scale;
  return v;
}

// ---------------------------------------------------------------------------
// Hand-packed examples.

TEST(FormatsHandPacked, UnpackedInt8S4GroupsMajorAndChannelsMajor) {
  const LayerDesc d = Desc(2, 8, 4, WeightType::kS4);
  const int8_t q[16] = {-8, -7, -1, 0, 1, 2, 6, 7,  //
                        7,  0,  0,  0, 0, 0, 0, -8};
  // G = 2. [G, N]: s(g=0,n=0)=1, s(0,1)=2, s(1,0)=3, s(1,1)=4.
  const std::vector<float> scales = Iota(4, 1.0f);
  WeightsView v;
  v.qweight = q;
  v.scales = scales.data();
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(Row(*w, 0), ElementsAre(0, 1, 7, 8, 9, 10, 14, 15));
  EXPECT_THAT(Row(*w, 1), ElementsAre(15, 8, 8, 8, 8, 8, 8, 0));
  EXPECT_THAT(w->zeros, ElementsAre(8, 8, 8, 8));
  // Canonical scales are [N, G].
  EXPECT_THAT(w->scales, ElementsAre(1.0f, 3.0f, 2.0f, 4.0f));
  EXPECT_FALSE(w->asymmetric);
  EXPECT_TRUE(w->bias.empty());

  v.groups_major = false;  // the same numbers read as [N, G]
  w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->scales, ElementsAre(1.0f, 2.0f, 3.0f, 4.0f));
}

TEST(FormatsHandPacked, UnpackedInt8U4ZeroPointsAndBias) {
  LayerDesc d = Desc(3, 4, 2, WeightType::kU4);
  d.scale_dtype = DType::kBF16;
  d.has_bias = true;
  d.bias_dtype = DType::kBF16;
  const int8_t q[12] = {0, 15, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const int8_t zp[6] = {0, 1, 2, 13, 14, 15};           // [G=2, N=3]
  const uint16_t scales[6] = {0x3F80, 0x4000, 0x4040,   // 1, 2, 3
                              0xBF80, 0x3F00, 0x3C00};  // -1, 0.5, 2^-7
  const uint16_t bias[3] = {0x3FC0, 0xC000, 0x0000};    // 1.5, -2, 0
  WeightsView v;
  v.qweight = q;
  v.scales = scales;
  v.zero_points = zp;
  v.bias = bias;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->u, ElementsAreArray(q));
  EXPECT_TRUE(w->asymmetric);
  EXPECT_THAT(ZerosOfGroup(*w, 0), ElementsAre(0, 1, 2));
  EXPECT_THAT(ZerosOfGroup(*w, 1), ElementsAre(13, 14, 15));
  EXPECT_THAT(w->scales,
              ElementsAre(1.0f, -1.0f, 2.0f, 0.5f, 3.0f, 0.0078125f));
  EXPECT_THAT(w->bias, ElementsAre(1.5f, -2.0f, 0.0f));

  v.groups_major = false;  // zero points [N=3, G=2]
  w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(ZerosOfGroup(*w, 0), ElementsAre(0, 2, 14));
  EXPECT_THAT(ZerosOfGroup(*w, 1), ElementsAre(1, 13, 15));
}

TEST(FormatsHandPacked, ZentorchS4IsTwosComplementLowNibbleFirst) {
  const LayerDesc d = Desc(2, 16, -1, WeightType::kS4);
  // Row 0: q[k] = k for k < 8 (0x76543210), then q = -1..-8 (0x89ABCDEF).
  // Row 1: q[k] = -8 for all k (0x88888888).
  const uint32_t words[4] = {0x76543210u, 0x89ABCDEFu, 0x88888888u,
                             0x88888888u};
  const float scales[2] = {0.5f, 0.25f};
  WeightsView v;
  v.format = WeightFormat::kZentorchInt32;
  v.qweight = words;
  v.scales = scales;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  // u = q + 8.
  EXPECT_THAT(Row(*w, 0), ElementsAre(8, 9, 10, 11, 12, 13, 14, 15,  //
                                      7, 6, 5, 4, 3, 2, 1, 0));
  EXPECT_THAT(Row(*w, 1), ::testing::Each(0));
}

TEST(FormatsHandPacked, ZentorchU4ReadsNibblesUnsigned) {
  const LayerDesc d = Desc(1, 8, -1, WeightType::kU4);
  const uint32_t words[1] = {0xFEDCBA98u};
  const float scales[1] = {1.0f};
  const int8_t zp[1] = {3};
  WeightsView v;
  v.format = WeightFormat::kZentorchInt32;
  v.qweight = words;
  v.scales = scales;
  v.zero_points = zp;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(Row(*w, 0), ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(w->zeros, ElementsAre(3));
}

TEST(FormatsHandPacked, CompressedTensorsStoresQPlus8AndZeroPointsAlongN) {
  const LayerDesc d = Desc(8, 16, 8, WeightType::kU4);  // G = 2
  // weight_packed [N=8, K/8=2]: every row u[k] = k (stored q + 8 = k).
  std::vector<uint32_t> packed;
  for (int n = 0; n < 8; ++n) {
    packed.push_back(0x76543210u);
    packed.push_back(0xFEDCBA98u);
  }
  // weight_zero_point [N/8=1, G=2]: group 0 zp+8 = 7 - n, group 1 = n + 8.
  const uint32_t zp[2] = {0x01234567u, 0xFEDCBA98u};
  // weight_scale [N, G]: s(n, g) = 10 n + g.
  std::vector<float> scales;
  for (int n = 0; n < 8; ++n) {
    scales.push_back(10.0f * n);
    scales.push_back(10.0f * n + 1);
  }
  WeightsView v;
  v.format = WeightFormat::kCompressedTensors;
  v.qweight = packed.data();
  v.scales = scales.data();
  v.zero_points = zp;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  for (int n = 0; n < 8; ++n) {
    EXPECT_THAT(Row(*w, n), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                        12, 13, 14, 15));
    EXPECT_EQ(w->S(n, 0), 10.0f * n);
    EXPECT_EQ(w->S(n, 1), 10.0f * n + 1);
  }
  EXPECT_THAT(ZerosOfGroup(*w, 0), ElementsAre(7, 6, 5, 4, 3, 2, 1, 0));
  EXPECT_THAT(ZerosOfGroup(*w, 1), ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
}

TEST(FormatsHandPacked, CompressedTensorsSymmetricHasImplicitZero8) {
  const LayerDesc d = Desc(1, 8, -1, WeightType::kS4);
  const uint32_t packed[1] = {0x08F01234u};  // q + 8, low nibble first
  const float scales[1] = {2.0f};
  WeightsView v;
  v.format = WeightFormat::kCompressedTensors;
  v.qweight = packed;
  v.scales = scales;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(Row(*w, 0), ElementsAre(4, 3, 2, 1, 0, 15, 8, 0));
  EXPECT_THAT(w->zeros, ElementsAre(8));
}

// GPTQ: qweight [K/8, N] packed along K; qzeros [G, N/8] along N.
struct GptqExample {
  std::vector<uint32_t> qweight;
  uint32_t qzeros[1] = {0xF6543210u};  // stored nibble n = n, column 7: 15
  std::vector<float> scales;
};

GptqExample MakeGptqExample() {
  GptqExample e;
  for (int n = 0; n < 8; ++n) e.qweight.push_back(0x76543210u);  // k = 0..7
  for (int n = 0; n < 8; ++n) {
    e.qweight.push_back(0x11111111u * static_cast<uint32_t>(n));  // k = 8..15
  }
  for (int n = 0; n < 8; ++n) e.scales.push_back(0.125f * (n + 1));
  return e;
}

TEST(FormatsHandPacked, GptqV1AddsOneToStoredZeros) {
  const LayerDesc d = Desc(8, 16, -1, WeightType::kU4);
  const GptqExample e = MakeGptqExample();
  WeightsView v;
  v.format = WeightFormat::kGptqV1;
  v.qweight = e.qweight.data();
  v.scales = e.scales.data();
  v.zero_points = e.qzeros;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  for (int n = 0; n < 8; ++n) {
    EXPECT_THAT(Row(*w, n),
                ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, n, n, n, n, n, n, n, n));
    EXPECT_EQ(w->S(n, 0), 0.125f * (n + 1));
  }
  // (stored + 1) & 0xF: a stored 15 is a zero of 0.
  EXPECT_THAT(ZerosOfGroup(*w, 0), ElementsAre(1, 2, 3, 4, 5, 6, 7, 0));
}

TEST(FormatsHandPacked, GptqV2StoresZerosAsIs) {
  const LayerDesc d = Desc(8, 16, -1, WeightType::kU4);
  const GptqExample e = MakeGptqExample();
  WeightsView v;
  v.format = WeightFormat::kGptqV2;
  v.qweight = e.qweight.data();
  v.scales = e.scales.data();
  v.zero_points = e.qzeros;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(ZerosOfGroup(*w, 0), ElementsAre(0, 1, 2, 3, 4, 5, 6, 15));
}

TEST(FormatsHandPacked, GptqSymmetricWithoutQzerosAndIdentityGIdx) {
  const LayerDesc d = Desc(8, 16, 8, WeightType::kS4);  // G = 2
  const GptqExample e = MakeGptqExample();
  std::vector<float> scales = e.scales;
  scales.insert(scales.end(), e.scales.begin(), e.scales.end());
  std::vector<int32_t> g_idx(16);
  for (int k = 0; k < 16; ++k) g_idx[k] = k / 8;
  WeightsView v;
  v.format = WeightFormat::kGptqV1;
  v.qweight = e.qweight.data();
  v.scales = scales.data();
  v.g_idx = g_idx.data();
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(Row(*w, 3),
              ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 3, 3, 3, 3, 3, 3, 3, 3));
  EXPECT_THAT(w->zeros, ::testing::Each(8));
}

TEST(FormatsHandPacked, AwqGemmInterleavesColumns) {
  const LayerDesc d = Desc(16, 2, -1, WeightType::kU4);
  // Nibble i of a word holds column order[i], order = [0,2,4,6,1,3,5,7].
  // Row k = 0: column c holds c (words 0x75316420, 0x75316420 for c + 8
  // mod 8). Row k = 1: column c holds 15 - (c % 8).
  const uint32_t qweight[4] = {0x75316420u, 0x75316420u, 0x8ACE9BDFu,
                               0x8ACE9BDFu};
  // qzeros [G=1, N/8=2]: column c holds c % 8 + 8 * (c / 8).
  const uint32_t qzeros[2] = {0x75316420u, 0xFDB9ECA8u};
  std::vector<float> scales(16, 1.0f);
  WeightsView v;
  v.format = WeightFormat::kAwqGemm;
  v.qweight = qweight;
  v.scales = scales.data();
  v.zero_points = qzeros;
  auto w = ImportWeights(d, v);
  ASSERT_TRUE(w.ok()) << w.status();
  for (int n = 0; n < 16; ++n) {
    EXPECT_THAT(Row(*w, n), ElementsAre(n % 8, 15 - n % 8)) << "n = " << n;
  }
  EXPECT_THAT(ZerosOfGroup(*w, 0), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                               11, 12, 13, 14, 15));
}

// ---------------------------------------------------------------------------
// Round trips.

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() ||  // memcmp must not see the null data() of empty
          std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void ExpectSameWeights(const CanonicalWeights& a, const CanonicalWeights& b) {
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.groups, b.groups);
  EXPECT_EQ(a.asymmetric, b.asymmetric);
  EXPECT_TRUE(a.u == b.u);
  EXPECT_TRUE(a.zeros == b.zeros);
  EXPECT_TRUE(SameBits(a.scales, b.scales));
  EXPECT_TRUE(SameBits(a.bias, b.bias));
}

TEST(FormatsRoundTrip, ExportThenImportIsIdentityOverRandomLayers) {
  std::mt19937 rng(42);
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
  for (int trial = 0; trial < 60; ++trial) {
    LayerDesc d;
    d.n = 8 * std::uniform_int_distribution<int>(1, 6)(rng);
    d.k = 8 * std::uniform_int_distribution<int>(1, 12)(rng);
    const int64_t group_choices[] = {-1, 8, 16, d.k};
    d.group_size = group_choices[trial % 4];
    if (d.group_size > 0 && d.k % d.group_size != 0) d.group_size = 8;
    d.weight_type = trial % 2 ? WeightType::kU4 : WeightType::kS4;
    d.scale_dtype = dtypes[trial % 3];
    d.has_bias = trial % 5 < 3;
    d.bias_dtype = trial % 3 == 1 ? DType::kBF16 : DType::kF32;
    const CanonicalWeights w = testing::RandomWeights(d, 1000 + trial);
    for (WeightFormat f : kAllFormats) {
      for (bool groups_major : {true, false}) {
        SCOPED_TRACE(testing::Describe(d) + " " + ToString(f) +
                     (groups_major ? " [G,N]" : " [N,G]"));
        auto ckpt = ExportWeights(d, w, f, groups_major);
        ASSERT_TRUE(ckpt.ok()) << ckpt.status();
        auto back = ImportWeights(d, ckpt->view());
        ASSERT_TRUE(back.ok()) << back.status();
        ExpectSameWeights(w, *back);
        // And the checkpoint bytes survive the other direction.
        auto again = ExportWeights(d, *back, f, groups_major);
        ASSERT_TRUE(again.ok()) << again.status();
        EXPECT_TRUE(again->qweight == ckpt->qweight);
        EXPECT_TRUE(again->zero_points == ckpt->zero_points);
        EXPECT_TRUE(again->scales == ckpt->scales);
        EXPECT_TRUE(again->bias == ckpt->bias);
      }
    }
  }
}

// For the int32-packed formats every bit pattern of qweight and qzeros is
// a valid checkpoint: random words must come back bit for bit.
TEST(FormatsRoundTrip, RandomPackedWordsSurviveImportExport) {
  std::mt19937 rng(7);
  for (WeightFormat f :
       {WeightFormat::kZentorchInt32, WeightFormat::kCompressedTensors,
        WeightFormat::kGptqV1, WeightFormat::kGptqV2, WeightFormat::kAwqGemm}) {
    for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
      if (type == WeightType::kU4 && f == WeightFormat::kZentorchInt32) {
        continue;  // zentorch zero points are int8, not packed
      }
      LayerDesc d = Desc(24, 32, 16, type);
      auto ckpt = ExportWeights(d, testing::RandomWeights(d, 3), f);
      ASSERT_TRUE(ckpt.ok()) << ckpt.status();
      for (auto& b : ckpt->qweight) b = static_cast<uint8_t>(rng());
      for (auto& b : ckpt->zero_points) b = static_cast<uint8_t>(rng());
      auto w = ImportWeights(d, ckpt->view());
      ASSERT_TRUE(w.ok()) << w.status();
      auto again = ExportWeights(d, *w, f);
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_TRUE(again->qweight == ckpt->qweight) << ToString(f);
      EXPECT_TRUE(again->zero_points == ckpt->zero_points) << ToString(f);
    }
  }
}

TEST(FormatsRoundTrip, F16NarrowingIsExactOrRefused) {
  struct Case {
    float v;
    bool exact;
  };
  const Case cases[] = {
      {1.0f, true},
      {-65504.0f, true},
      {65520.0f, false},         // rounds to inf in f16
      {1.0f + 0x1p-10f, true},   // last mantissa bit
      {1.0f + 0x1p-11f, false},  // one bit too many
      {0x1p-14f, true},          // smallest normal
      {0x1p-24f, true},          // smallest subnormal
      {3 * 0x1p-24f, true},      // subnormal with two bits
      {0x1p-25f, false},         // below the subnormals
      {0x1p-126f, false},        // f32 normal far below f16
      {0.0f, true},
      {-0.0f, true},
      {std::numeric_limits<float>::infinity(), true},
  };
  for (const Case& c : cases) {
    uint16_t h = 0;
    EXPECT_EQ(StoreExact(c.v, DType::kF16, &h, 0), c.exact) << c.v;
    if (c.exact) {
      const float back = F16ToF32(h);
      EXPECT_EQ(std::memcmp(&back, &c.v, 4), 0) << c.v;
    }
  }
  uint16_t b = 0;
  EXPECT_TRUE(StoreExact(1.5f, DType::kBF16, &b, 0));
  EXPECT_EQ(b, 0x3FC0);
  EXPECT_FALSE(StoreExact(1.0f + 0x1p-8f, DType::kBF16, &b, 0));
}

// ---------------------------------------------------------------------------
// Errors.

::testing::AssertionResult FailsWith(const absl::Status& s,
                                     const std::string& text) {
  if (s.ok()) return ::testing::AssertionFailure() << "unexpectedly OK";
  if (s.code() != absl::StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "wrong code: " << s;
  }
  if (std::string(s.message()).find(text) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message \"" << s.message() << "\" lacks \"" << text << "\"";
  }
  return ::testing::AssertionSuccess();
}

// A valid checkpoint of `f` for a shape that the format may reject: built
// from a layer the format accepts, then viewed with the bad desc. Buffers
// are large enough for either.
struct Buffers {
  std::vector<uint8_t> qweight = std::vector<uint8_t>(4096);
  std::vector<uint8_t> scales = std::vector<uint8_t>(4096);
  std::vector<uint8_t> zeros = std::vector<uint8_t>(4096);
  WeightsView View(WeightFormat f, WeightType type) const {
    WeightsView v;
    v.format = f;
    v.qweight = qweight.data();
    v.scales = scales.data();
    if (type == WeightType::kU4) v.zero_points = zeros.data();
    return v;
  }
};

TEST(FormatsErrors, PackedAlongKNeedsKMultipleOf8) {
  const Buffers buf;
  for (WeightFormat f :
       {WeightFormat::kZentorchInt32, WeightFormat::kCompressedTensors,
        WeightFormat::kGptqV1, WeightFormat::kGptqV2}) {
    const LayerDesc d = Desc(8, 100, -1, WeightType::kS4);
    EXPECT_TRUE(FailsWith(ImportWeights(d, buf.View(f, d.weight_type)).status(),
                          std::string("K = 100 is not a multiple of 8, which "
                                      "the ") +
                              ToString(f)));
    const CanonicalWeights w = testing::RandomWeights(d, 1);
    EXPECT_TRUE(FailsWith(ExportWeights(d, w, f).status(), "K = 100"));
  }
  // The byte-per-value and N-packed formats take any K.
  for (WeightFormat f : {WeightFormat::kUnpackedInt8, WeightFormat::kAwqGemm}) {
    const LayerDesc d = Desc(8, 100, -1, WeightType::kU4);
    auto ckpt = ExportWeights(d, testing::RandomWeights(d, 1), f);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    EXPECT_TRUE(ImportWeights(d, ckpt->view()).ok());
  }
}

TEST(FormatsErrors, PackedAlongNNeedsNMultipleOf8) {
  const Buffers buf;
  struct Case {
    WeightFormat f;
    WeightType type;
  };
  for (const Case& c : {Case{WeightFormat::kCompressedTensors, WeightType::kU4},
                        Case{WeightFormat::kGptqV1, WeightType::kU4},
                        Case{WeightFormat::kGptqV2, WeightType::kU4},
                        Case{WeightFormat::kAwqGemm, WeightType::kU4},
                        Case{WeightFormat::kAwqGemm, WeightType::kS4}}) {
    const LayerDesc d = Desc(12, 16, -1, c.type);
    SCOPED_TRACE(ToString(c.f));
    EXPECT_TRUE(FailsWith(ImportWeights(d, buf.View(c.f, c.type)).status(),
                          "N = 12 is not a multiple of 8"));
    EXPECT_TRUE(
        FailsWith(ExportWeights(d, testing::RandomWeights(d, 1), c.f).status(),
                  "N = 12"));
  }
  // Symmetric compressed-tensors and GPTQ have nothing packed along N.
  for (WeightFormat f : {WeightFormat::kCompressedTensors,
                         WeightFormat::kGptqV1, WeightFormat::kZentorchInt32}) {
    const LayerDesc d = Desc(12, 16, -1, WeightType::kS4);
    auto ckpt = ExportWeights(d, testing::RandomWeights(d, 1), f);
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    EXPECT_TRUE(ImportWeights(d, ckpt->view()).ok()) << ToString(f);
  }
}

TEST(FormatsErrors, UnpackedInt8ValuesOutOfRangeNameTheFirstOne) {
  LayerDesc d = Desc(2, 4, -1, WeightType::kS4);
  const float scales[2] = {1, 1};
  int8_t q[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  WeightsView v;
  v.qweight = q;
  v.scales = scales;
  EXPECT_TRUE(ImportWeights(d, v).ok());
  q[6] = 8;
  q[7] = -9;
  EXPECT_TRUE(FailsWith(ImportWeights(d, v).status(),
                        "qweight[n = 1, k = 2] = 8 is outside [-8, 7]"));
  q[6] = 0;
  EXPECT_TRUE(FailsWith(ImportWeights(d, v).status(),
                        "qweight[n = 1, k = 3] = -9 is outside [-8, 7]"));

  d.weight_type = WeightType::kU4;
  const int8_t zp[2] = {0, 15};
  v.zero_points = zp;
  int8_t u[8] = {0, 15, 2, 3, 4, 5, 6, 7};
  v.qweight = u;
  EXPECT_TRUE(ImportWeights(d, v).ok());
  u[2] = -1;
  EXPECT_TRUE(FailsWith(ImportWeights(d, v).status(),
                        "qweight[n = 0, k = 2] = -1 is outside [0, 15]"));
  u[2] = 16;
  EXPECT_TRUE(FailsWith(ImportWeights(d, v).status(), "= 16 is outside"));
}

TEST(FormatsErrors, Int8ZeroPointsOutOfRange) {
  const LayerDesc d = Desc(2, 8, -1, WeightType::kU4);
  const float scales[2] = {1, 1};
  const int8_t q[16] = {};
  const uint32_t words[2] = {};
  for (WeightFormat f :
       {WeightFormat::kUnpackedInt8, WeightFormat::kZentorchInt32}) {
    WeightsView v;
    v.format = f;
    v.qweight =
        f == WeightFormat::kUnpackedInt8 ? static_cast<const void*>(q) : words;
    v.scales = scales;
    const int8_t zp_hi[2] = {3, 16};
    v.zero_points = zp_hi;
    EXPECT_TRUE(FailsWith(ImportWeights(d, v).status(),
                          "zero_points[g = 0, n = 1] = 16 is outside [0, 15]"));
    const int8_t zp_lo[2] = {-1, 0};
    v.zero_points = zp_lo;
    EXPECT_TRUE(FailsWith(ImportWeights(d, v).status(),
                          "zero_points[g = 0, n = 0] = -1"));
  }
}

TEST(FormatsErrors, ActOrderGIdxNeedsFullGroups) {
  const LayerDesc d = Desc(8, 32, 8, WeightType::kS4);
  auto ckpt =
      ExportWeights(d, testing::RandomWeights(d, 1), WeightFormat::kGptqV1);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ckpt->g_idx.resize(32);
  for (int k = 0; k < 32; ++k) ckpt->g_idx[k] = k / 8;
  EXPECT_TRUE(ImportWeights(d, ckpt->view()).ok());
  std::swap(ckpt->g_idx[9], ckpt->g_idx[30]);  // act-order: full groups
  auto permuted = ImportWeights(d, ckpt->view());
  ASSERT_TRUE(permuted.ok()) << permuted.status();
  EXPECT_EQ(permuted->k_perm.size(), 32u);
  ckpt->g_idx[9] = 2;  // group 3 keeps 7 members, group 2 gets 9
  EXPECT_TRUE(FailsWith(ImportWeights(d, ckpt->view()).status(),
                        "g_idx gives group 2 9 members, but every group "
                        "needs exactly group_size = 8"));
  ckpt->g_idx[9] = 4;
  EXPECT_TRUE(FailsWith(ImportWeights(d, ckpt->view()).status(),
                        "g_idx[9] = 4 is not a group"));
}

TEST(FormatsErrors, GIdxNotForAwq) {
  const LayerDesc d = Desc(8, 8, -1, WeightType::kS4);
  auto ckpt =
      ExportWeights(d, testing::RandomWeights(d, 1), WeightFormat::kAwqGemm);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ckpt->g_idx.assign(8, 0);
  EXPECT_TRUE(FailsWith(ImportWeights(d, ckpt->view()).status(),
                        "g_idx is given but the awq"));
  ckpt = ExportWeights(d, testing::RandomWeights(d, 1),
                       WeightFormat::kUnpackedInt8);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ckpt->g_idx.assign(8, 0);
  EXPECT_TRUE(ImportWeights(d, ckpt->view()).ok());
}

TEST(FormatsErrors, UnknownFormat) {
  const LayerDesc d = Desc(8, 8, -1, WeightType::kS4);
  const Buffers buf;
  EXPECT_TRUE(FailsWith(
      ImportWeights(d, buf.View(static_cast<WeightFormat>(9), WeightType::kS4))
          .status(),
      "weights.format = 9"));
  EXPECT_TRUE(FailsWith(ExportWeights(d, testing::RandomWeights(d, 1),
                                      static_cast<WeightFormat>(-1))
                            .status(),
                        "weights.format = -1"));
}

TEST(FormatsErrors, ExportRefusesInexactScalesAndBias) {
  LayerDesc d = Desc(8, 8, -1, WeightType::kS4);
  d.has_bias = true;
  d.scale_dtype = DType::kBF16;  // random values fit bf16 and f16
  d.bias_dtype = DType::kBF16;
  CanonicalWeights w = testing::RandomWeights(d, 1);
  w.scales[3] = 1.0f + 0x1p-11f;  // needs 11 mantissa bits
  for (DType t : {DType::kBF16, DType::kF16}) {
    d.scale_dtype = t;
    EXPECT_TRUE(FailsWith(ExportWeights(d, w, WeightFormat::kGptqV2).status(),
                          std::string("scale s[n = 3, g = 0] = 1.00048828 is "
                                      "not exactly representable in ") +
                              ToString(t)));
  }
  d.scale_dtype = DType::kF32;
  EXPECT_TRUE(ExportWeights(d, w, WeightFormat::kGptqV2).ok());
  d.bias_dtype = DType::kBF16;
  w.bias[5] = 1.0f + 0x1p-12f;
  EXPECT_TRUE(FailsWith(ExportWeights(d, w, WeightFormat::kGptqV2).status(),
                        "bias[5] = 1.00024414 is not exactly representable in "
                        "bf16"));
}

TEST(FormatsErrors, ExportRefusesWeightsTheLayerCannotHold) {
  const LayerDesc d = Desc(8, 8, -1, WeightType::kS4);
  CanonicalWeights w = testing::RandomWeights(d, 1);
  w.zeros[2] = 7;
  EXPECT_TRUE(
      FailsWith(ExportWeights(d, w, WeightFormat::kUnpackedInt8).status(),
                "weights.zeros[2] = 7 is not 8"));
  w = testing::RandomWeights(d, 1);
  w.u[5] = 16;
  EXPECT_TRUE(
      FailsWith(ExportWeights(d, w, WeightFormat::kUnpackedInt8).status(),
                "weights.u[5] = 16"));
  w = testing::RandomWeights(Desc(8, 16, -1, WeightType::kS4), 1);
  EXPECT_TRUE(
      FailsWith(ExportWeights(d, w, WeightFormat::kUnpackedInt8).status(),
                "do not match the layer"));
}

}  // namespace
}  // namespace w4jit::internal
