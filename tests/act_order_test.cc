// GPTQ act-order (g_idx not in order): layers made from act-order
// checkpoints, run on every tier this machine runs (reference and AVX2;
// AVX-512 code is generated in act_quantizer_test), both modes, every path
// (W4A16 int4 kernel and dequantized panels, DA8W4 unpacking tiles, 2-D
// split and decoded panels), bf16 / f32 in and out, against an f64 oracle
// that reads the checkpoint as it is (g_idx and all) and never sees the
// permutation the importer makes. Plus the refusals of bad g_idx.
#include "runtime/formats/act_order.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/formats/import.h"
#include "runtime/reference.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

namespace w4jit {
namespace {

using internal::CanonicalWeights;
using internal::IsaTier;
using internal::LoadAsF32;
using internal::OwnedCheckpoint;

uint32_t Word(const std::vector<uint8_t>& bytes, int64_t index) {
  uint32_t w;
  std::memcpy(&w, bytes.data() + 4 * index, 4);
  return w;
}

// The dense layer a GPTQ checkpoint describes, read straight from its
// tensors (formats.md): W[n][k] = (q[k, n] - zero[g_idx[k], n]) *
// scale[g_idx[k], n], in checkpoint order.
struct GptqDense {
  int64_t n = 0, k = 0, groups = 0;
  std::vector<int32_t> g_idx;  // [K]
  std::vector<int> q;          // [N][K], 0..15
  std::vector<int> zero;       // [G][N]
  std::vector<double> scale;   // [G][N]
  std::vector<double> bias;    // [N] or empty
};

GptqDense ReadGptq(const LayerDesc& d, const OwnedCheckpoint& c) {
  GptqDense r;
  r.n = d.n;
  r.k = d.k;
  r.groups = d.groups();
  r.g_idx = c.g_idx;
  if (r.g_idx.empty()) {
    for (int64_t k = 0; k < d.k; ++k) {
      r.g_idx.push_back(static_cast<int32_t>(k / d.effective_group_size()));
    }
  }
  r.q.resize(static_cast<size_t>(d.n * d.k));
  for (int64_t k = 0; k < d.k; ++k) {
    for (int64_t n = 0; n < d.n; ++n) {
      r.q[n * d.k + k] =
          (Word(c.qweight, (k / 8) * d.n + n) >> (4 * (k % 8))) & 15;
    }
  }
  r.zero.assign(static_cast<size_t>(r.groups * d.n), 8);
  r.scale.resize(static_cast<size_t>(r.groups * d.n));
  for (int64_t g = 0; g < r.groups; ++g) {
    for (int64_t n = 0; n < d.n; ++n) {
      r.scale[g * d.n + n] =
          LoadAsF32(c.scales.data(), d.scale_dtype, g * d.n + n);
      if (d.weight_type == WeightType::kU4) {
        const int stored =
            (Word(c.zero_points, g * (d.n / 8) + n / 8) >> (4 * (n % 8))) & 15;
        r.zero[g * d.n + n] =
            c.format == WeightFormat::kGptqV1 ? (stored + 1) & 15 : stored;
      }
    }
  }
  for (int64_t n = 0; d.has_bias && n < d.n; ++n) {
    r.bias.push_back(LoadAsF32(c.bias.data(), d.bias_dtype, n));
  }
  return r;
}

// The f64 oracle and its term magnitude (numerics.md tolerances) for row
// x_row of x, column n. W4A16: sum_k W[n][k] * x[k]. DA8W4: x quantized
// per row (order does not matter to it), then
// sa * sum_g s[g, n] * sum_{k: g_idx[k] = g} qa[k] * (q - zero) + bias.
check::Expected Oracle(const LayerDesc& d, const GptqDense& w,
                       const void* x_row, int64_t n) {
  std::vector<double> per_group(static_cast<size_t>(w.groups), 0.0);
  std::vector<double> per_group_abs(static_cast<size_t>(w.groups), 0.0);
  double sa = 1.0;
  internal::QuantizedRow qrow;
  if (d.mode == Mode::kDA8W4) {
    qrow = internal::QuantizeRowRef(x_row, d.act_dtype, d.k, d.k);
    sa = qrow.scale;
  }
  for (int64_t k = 0; k < w.k; ++k) {
    const int64_t g = w.g_idx[k];
    const double xv = d.mode == Mode::kDA8W4 ? static_cast<double>(qrow.qa[k])
                                             : LoadAsF32(x_row, d.act_dtype, k);
    const double t = (w.q[n * w.k + k] - w.zero[g * w.n + n]) * xv;
    per_group[g] += t;
    per_group_abs[g] += std::fabs(t);
  }
  double value = 0.0, magnitude = 0.0;
  for (int64_t g = 0; g < w.groups; ++g) {
    const double s = w.scale[g * w.n + n];
    value += s * per_group[g];
    // DA8W4's T uses |s * acc_g| (acc exact); W4A16's sums |terms|.
    magnitude +=
        std::fabs(s) *
        (d.mode == Mode::kDA8W4 ? std::fabs(per_group[g]) : per_group_abs[g]);
  }
  value *= sa;
  magnitude *= std::fabs(sa);
  if (!w.bias.empty()) {
    value += w.bias[n];
    magnitude += std::fabs(w.bias[n]);
  }
  return {static_cast<float>(value), magnitude};
}

struct Shape {
  int64_t n, k, group;
};

// Makes an act-order GPTQ checkpoint of `d`, creates the layer on `isa`
// and checks every M against the oracle on the checkpoint.
void CheckActOrderLayer(const LayerDesc& d, WeightFormat format, IsaTier isa,
                        const std::vector<int64_t>& ms, uint32_t seed) {
  SCOPED_TRACE(absl::StrCat(testing::Describe(d), " ", ToString(format),
                            " isa=", internal::ToString(isa), " seed=", seed));
  internal::ScopedIsaCap cap(isa);
  CanonicalWeights w = testing::RandomWeights(d, seed);
  w.k_perm = testing::RandomActOrder(d, seed + 1);
  absl::StatusOr<OwnedCheckpoint> ckpt = internal::ExportWeights(d, w, format);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ASSERT_EQ(ckpt->g_idx.size(), static_cast<size_t>(d.k));
  auto layer = Layer::Create(d, ckpt->view());
  ASSERT_TRUE(layer.ok()) << layer.status();
  const std::vector<std::string> names = (*layer)->kernel_names();
  ASSERT_FALSE(names.empty());
  if (isa == IsaTier::kRef) {
    EXPECT_EQ(names[0].rfind("reference", 0), 0u) << names[0];
  } else {
    EXPECT_NE(names[0].rfind("reference", 0), 0u) << names[0];
  }
  const GptqDense dense = ReadGptq(d, *ckpt);
  for (int64_t m : ms) {
    SCOPED_TRACE(absl::StrCat("m=", m));
    const int64_t ldx = d.k + 3;
    const std::vector<uint8_t> x = testing::RandomActivations(
        d, m, ldx, seed + 2 + static_cast<uint32_t>(m));
    absl::StatusOr<std::vector<float>> y =
        testing::RunToF32(**layer, m, x, ldx);
    ASSERT_TRUE(y.ok()) << y.status();
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 5; ++i) {
      const void* x_row = x.data() + i * ldx * internal::DTypeSize(d.act_dtype);
      for (int64_t n = 0; n < d.n && bad < 5; ++n) {
        const check::Expected e = Oracle(d, dense, x_row, n);
        const double got = (*y)[i * d.n + n];
        const double tol = testing::Tolerance(d, e);
        if (!(std::fabs(got - e.value) <= tol)) {
          ++bad;
          ADD_FAILURE() << "y[" << i << ", " << n << "] = " << got
                        << ", oracle " << e.value << " (tolerance " << tol
                        << ")";
        }
      }
    }
  }
  // The layer matches the reference run on its own weights too (same
  // k_perm as the importer made: RandomActOrder gives its canonical form).
  const std::vector<uint8_t> x = testing::RandomActivations(d, 3, d.k, seed);
  EXPECT_TRUE(testing::RunAndCheck(**layer, w, 3, x, d.k, d.n));
}

// GEMV, register-tile tails, W4A16 panels (M >= 8 on AVX2), DA8W4 2-D split
// (M > 16) and decoded panels (M >= 32).
const std::vector<int64_t> kMs = {1, 2, 3, 7, 13, 20, 33, 50};

TEST(ActOrder, EveryModeTierDtypeAndPath) {
  SetNumThreads(2);
  uint32_t seed = 100;
  for (IsaTier isa : {IsaTier::kRef, IsaTier::kAvx2}) {
    if (isa != IsaTier::kRef && !testing::CanRunTier(isa)) {
      ADD_FAILURE() << testing::WhyCannotRunTier(isa);
      continue;
    }
    for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
      for (DType act : {DType::kBF16, DType::kF32}) {
        for (DType out : {DType::kBF16, DType::kF32}) {
          for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
            for (const Shape& s : {Shape{40, 256, 32}, Shape{24, 96, 8}}) {
              LayerDesc d = testing::KernelTestDesc(mode, s.n, s.k, s.group,
                                                    type, act, out,
                                                    /*bias=*/seed % 2 == 0);
              d.scale_dtype = DType::kF16;
              CheckActOrderLayer(
                  d, seed % 3 ? WeightFormat::kGptqV1 : WeightFormat::kGptqV2,
                  isa, kMs, seed);
              ++seed;
            }
          }
        }
      }
    }
  }
  SetNumThreads(0);
}

// Llama-like group 128 with several groups, one thread and two.
TEST(ActOrder, Group128) {
  for (int threads : {1, 2}) {
    SetNumThreads(threads);
    for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
      LayerDesc d = testing::KernelTestDesc(mode, 72, 512, 128, WeightType::kU4,
                                            DType::kBF16, DType::kBF16, true);
      CheckActOrderLayer(d, WeightFormat::kGptqV1, IsaTier::kAvx2, {1, 5, 64},
                         7 + static_cast<uint32_t>(threads));
    }
  }
  SetNumThreads(0);
}

// K = group: the only valid g_idx is all zeros (one group), which is no
// permutation at all; per-channel likewise.
TEST(ActOrder, OneGroupIsTheIdentity) {
  for (int64_t group : {int64_t{64}, int64_t{-1}}) {
    LayerDesc d =
        testing::KernelTestDesc(Mode::kDA8W4, 16, 64, group, WeightType::kS4,
                                DType::kF32, DType::kF32, false);
    CheckActOrderLayer(d, WeightFormat::kGptqV2, IsaTier::kAvx2, {1, 9}, 3);
    d.mode = Mode::kW4A16;
    CheckActOrderLayer(d, WeightFormat::kGptqV2, IsaTier::kAvx2, {1, 9}, 4);
    std::vector<int32_t> zeros(64, 0);
    auto perm = internal::ActOrderPermutation(d, zeros.data());
    ASSERT_TRUE(perm.ok());
    EXPECT_TRUE(perm->empty());
  }
}

// Every format but AWQ takes a g_idx; export + import is a round trip of
// the permuted canonical weights.
TEST(ActOrder, FormatsRoundTrip) {
  LayerDesc d =
      testing::KernelTestDesc(Mode::kW4A16, 16, 64, 16, WeightType::kU4,
                              DType::kF32, DType::kF32, false);
  CanonicalWeights w = testing::RandomWeights(d, 5);
  w.k_perm = testing::RandomActOrder(d, 6);
  for (WeightFormat f : testing::kAllFormats) {
    SCOPED_TRACE(ToString(f));
    auto ckpt = internal::ExportWeights(d, w, f);
    if (f == WeightFormat::kAwqGemm) {
      ASSERT_FALSE(ckpt.ok());
      EXPECT_NE(ckpt.status().message().find("no g_idx"), std::string::npos)
          << ckpt.status();
      continue;
    }
    ASSERT_TRUE(ckpt.ok()) << ckpt.status();
    auto back = internal::ImportWeights(d, ckpt->view());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->k_perm, w.k_perm);
    EXPECT_EQ(back->u, w.u);
    EXPECT_EQ(back->scales, w.scales);
    EXPECT_EQ(back->zeros, w.zeros);
  }
}

class ActOrderRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    d_ = testing::KernelTestDesc(Mode::kW4A16, 16, 64, 16, WeightType::kS4,
                                 DType::kF32, DType::kF32, false);
    auto c = internal::ExportWeights(d_, testing::RandomWeights(d_, 1),
                                     WeightFormat::kGptqV1);
    ASSERT_TRUE(c.ok()) << c.status();
    ckpt_ = *std::move(c);
    for (int64_t k = 0; k < 64; ++k) {
      ckpt_.g_idx.push_back(static_cast<int32_t>(3 - k / 16));  // reversed
    }
  }
  std::string Error() {
    auto layer = Layer::Create(d_, ckpt_.view());
    EXPECT_FALSE(layer.ok());
    return layer.ok() ? "" : std::string(layer.status().message());
  }
  LayerDesc d_;
  OwnedCheckpoint ckpt_;
};

TEST_F(ActOrderRefusal, ReversedGroupsAreAccepted) {
  EXPECT_TRUE(Layer::Create(d_, ckpt_.view()).ok());
}

TEST_F(ActOrderRefusal, GroupWithTooManyMembers) {
  ckpt_.g_idx[5] = 2;  // group 3 loses one, group 2 gains one
  EXPECT_EQ(Error(),
            "g_idx gives group 2 17 members, but every group needs exactly "
            "group_size = 16 (act-order permutes K so that groups are "
            "contiguous; K = 64, 4 groups)");
}

TEST_F(ActOrderRefusal, GroupWithTooFewMembers) {
  ckpt_.g_idx[63] = 1;  // group 0 has 15 members
  EXPECT_EQ(Error(),
            "g_idx gives group 0 15 members, but every group needs exactly "
            "group_size = 16 (act-order permutes K so that groups are "
            "contiguous; K = 64, 4 groups)");
}

TEST_F(ActOrderRefusal, OutOfRangeNamesTheRow) {
  ckpt_.g_idx[37] = 4;
  EXPECT_EQ(Error(),
            "g_idx[37] = 4 is not a group: K = 64 with group_size = 16 has "
            "groups 0..3");
  ckpt_.g_idx[37] = -1;
  EXPECT_EQ(Error(),
            "g_idx[37] = -1 is not a group: K = 64 with group_size = 16 has "
            "groups 0..3");
}

TEST_F(ActOrderRefusal, AwqHasNoGroupIndex) {
  auto c = internal::ExportWeights(d_, testing::RandomWeights(d_, 1),
                                   WeightFormat::kAwqGemm);
  ASSERT_TRUE(c.ok()) << c.status();
  c->g_idx = ckpt_.g_idx;
  auto layer = Layer::Create(d_, c->view());
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("has no g_idx"), std::string::npos)
      << layer.status();
}

// The C API passes g_idx through unchanged.
TEST_F(ActOrderRefusal, CApiAcceptsAndRefusesAlike) {
  w4jit_layer_desc cd;
  w4jit_layer_desc_init(&cd);
  cd.n = d_.n;
  cd.k = d_.k;
  cd.group_size = d_.group_size;
  cd.scale_dtype = static_cast<w4jit_dtype>(d_.scale_dtype);  // as exported
  cd.act_dtype = W4JIT_F32;
  cd.out_dtype = W4JIT_F32;
  cd.mode = W4JIT_W4A16;
  w4jit_weights cw{};
  cw.format = W4JIT_FORMAT_GPTQ_V1;
  cw.qweight = ckpt_.qweight.data();
  cw.scales = ckpt_.scales.data();
  cw.g_idx = ckpt_.g_idx.data();
  cw.groups_major = 1;
  w4jit_layer* layer = nullptr;
  ASSERT_EQ(w4jit_layer_create(&cd, &cw, &layer), W4JIT_OK)
      << w4jit_last_error();
  w4jit_layer_destroy(layer);
  ckpt_.g_idx[0] = 9;
  cw.g_idx = ckpt_.g_idx.data();
  EXPECT_EQ(w4jit_layer_create(&cd, &cw, &layer), W4JIT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(w4jit_last_error()).find("g_idx[0] = 9"),
            std::string::npos);
}

}  // namespace
}  // namespace w4jit
