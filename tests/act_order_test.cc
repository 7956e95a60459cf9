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

// `groups`: the scales' groups, 0 for the layer's own (a K-shard's scales
// hold the whole checkpoint's).
GptqDense ReadGptq(const LayerDesc& d, const OwnedCheckpoint& c,
                   int64_t groups = 0) {
  GptqDense r;
  r.n = d.n;
  r.k = d.k;
  r.groups = groups != 0 ? groups : d.groups();
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

// Every tier the CPU runs (tests/util/isa.h), the reference included.
class ActOrderTier : public ::testing::TestWithParam<IsaTier> {
 protected:
  void SetUp() override {
    if (GetParam() != IsaTier::kRef && !testing::StartIsaRun(GetParam())) {
      GTEST_SKIP() << testing::WhyCannotRunTier(GetParam());
    }
  }
};

TEST_P(ActOrderTier, EveryModeDtypeAndPath) {
  const IsaTier isa = GetParam();
  SetNumThreads(2);
  uint32_t seed = 100;
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (DType act : {DType::kBF16, DType::kF32}) {
      for (DType out : {DType::kBF16, DType::kF32}) {
        for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
          for (const Shape& s : {Shape{40, 256, 32}, Shape{24, 96, 8}}) {
            LayerDesc d =
                testing::KernelTestDesc(mode, s.n, s.k, s.group, type, act, out,
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

// Row-parallel tensor parallelism as vLLM shards a GPTQ act-order layer:
// rank r of `ranks` takes K rows [r K / ranks, (r + 1) K / ranks) of qweight
// and g_idx, and the whole scales and zero points; its g_idx then names
// groups of the whole checkpoint, unevenly populated (docs/tensor-parallel.md).
OwnedCheckpoint KShard(const LayerDesc& full, const OwnedCheckpoint& c,
                       int ranks, int r) {
  const int64_t ks = full.k / ranks;
  OwnedCheckpoint s = c;
  const size_t row_bytes = static_cast<size_t>(full.n) * 4;  // [K/8, N] int32
  s.qweight.assign(c.qweight.begin() + (r * ks / 8) * row_bytes,
                   c.qweight.begin() + ((r + 1) * ks / 8) * row_bytes);
  s.g_idx.assign(c.g_idx.begin() + r * ks, c.g_idx.begin() + (r + 1) * ks);
  return s;
}

// Builds every rank's layer from its K-shard, checks each against the
// oracle on the shard's tensors, and the sum over ranks (the all-reduce)
// against the unsharded layer's oracle.
void CheckShardedLayer(const LayerDesc& full, IsaTier isa, int ranks,
                       bool contiguous_groups, const std::vector<int64_t>& ms,
                       uint32_t seed) {
  SCOPED_TRACE(absl::StrCat(testing::Describe(full), " ranks=", ranks,
                            " isa=", internal::ToString(isa), " seed=", seed,
                            contiguous_groups ? " in order" : " act-order"));
  internal::ScopedIsaCap cap(isa);
  CanonicalWeights w = testing::RandomWeights(full, seed);
  if (!contiguous_groups) w.k_perm = testing::RandomActOrder(full, seed + 1);
  absl::StatusOr<OwnedCheckpoint> ckpt =
      internal::ExportWeights(full, w, WeightFormat::kGptqV1);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  if (ckpt->g_idx.empty()) {  // in order: a g_idx of k / group_size
    for (int64_t k = 0; k < full.k; ++k) {
      ckpt->g_idx.push_back(static_cast<int32_t>(k / full.group_size));
    }
  }
  GptqDense whole = ReadGptq(full, *ckpt);
  whole.bias.clear();  // the ranks have none (the host adds it once)
  LayerDesc shard_desc = full;
  shard_desc.k = full.k / ranks;
  shard_desc.has_bias = false;  // the host adds the bias once, after
  const int64_t ldx = full.k + 5;
  for (int64_t m : ms) {
    SCOPED_TRACE(absl::StrCat("m=", m));
    const std::vector<uint8_t> x = testing::RandomActivations(
        full, m, ldx, seed + 7 + static_cast<uint32_t>(m));
    const size_t esize = internal::DTypeSize(full.act_dtype);
    std::vector<double> sum(static_cast<size_t>(m * full.n), 0.0);
    // The sum's tolerance: the ranks' own (each partial is rounded to
    // out_dtype on its own: one ulp of the partial, which may exceed the
    // sum's).
    std::vector<double> sum_tol(sum.size(), 0.0);
    for (int r = 0; r < ranks; ++r) {
      OwnedCheckpoint part = KShard(full, *ckpt, ranks, r);
      part.bias.clear();
      WeightsView view = part.view();
      view.scale_groups = full.groups();
      auto layer = Layer::Create(shard_desc, view);
      ASSERT_TRUE(layer.ok()) << layer.status();
      const std::vector<std::string> names = (*layer)->kernel_names();
      ASSERT_FALSE(names.empty());
      EXPECT_EQ(names[0].rfind("reference", 0) == 0, isa == IsaTier::kRef)
          << names[0];
      const GptqDense dense = ReadGptq(shard_desc, part, full.groups());
      // The shard's x: columns [r K_s, (r + 1) K_s) of x, ldx apart.
      std::vector<uint8_t> xs(x.size());
      std::memcpy(xs.data(), x.data() + r * shard_desc.k * esize,
                  x.size() - r * shard_desc.k * esize);
      absl::StatusOr<std::vector<float>> y =
          testing::RunToF32(**layer, m, xs, ldx);
      ASSERT_TRUE(y.ok()) << y.status();
      int bad = 0;
      for (int64_t i = 0; i < m && bad < 5; ++i) {
        const void* x_row = xs.data() + i * ldx * esize;
        for (int64_t n = 0; n < full.n && bad < 5; ++n) {
          const check::Expected e = Oracle(shard_desc, dense, x_row, n);
          const double got = (*y)[i * full.n + n];
          const double tol = testing::Tolerance(shard_desc, e);
          sum[i * full.n + n] += got;
          sum_tol[i * full.n + n] += tol;
          if (!(std::fabs(got - e.value) <= tol)) {
            ++bad;
            ADD_FAILURE() << "rank " << r << ": y[" << i << ", " << n
                          << "] = " << got << ", oracle " << e.value;
          }
        }
      }
    }
    // W4A16's all-reduce equals the unsharded layer (DA8W4 quantizes each
    // rank's part of x on its own: a different, equally valid layer).
    if (full.mode != Mode::kW4A16) continue;
    int bad = 0;
    for (int64_t i = 0; i < m && bad < 5; ++i) {
      const void* x_row = x.data() + i * ldx * esize;
      for (int64_t n = 0; n < full.n && bad < 5; ++n) {
        const double want = Oracle(full, whole, x_row, n).value;
        const double tol = sum_tol[i * full.n + n];
        if (!(std::fabs(sum[i * full.n + n] - want) <= tol)) {
          ++bad;
          ADD_FAILURE() << "sum over ranks y[" << i << ", " << n
                        << "] = " << sum[i * full.n + n] << ", unsharded "
                        << want << " (tolerance " << tol << ")";
        }
      }
    }
  }
}

TEST_P(ActOrderTier, RowParallelShardsMatchTheCheckpoint) {
  const IsaTier isa = GetParam();
  SetNumThreads(2);
  uint32_t seed = 500;
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    for (DType act : {DType::kBF16, DType::kF32}) {
      for (WeightType type : {WeightType::kS4, WeightType::kU4}) {
        for (int ranks : {2, 4}) {
          LayerDesc d = testing::KernelTestDesc(mode, 40, 1024, 128, type, act,
                                                act, seed % 2 == 0);
          d.scale_dtype = DType::kF16;
          CheckShardedLayer(d, isa, ranks, /*contiguous_groups=*/false,
                            {1, 3, 20, 50}, seed++);
        }
      }
    }
  }
  SetNumThreads(0);
}

INSTANTIATE_TEST_SUITE_P(Tiers, ActOrderTier,
                         ::testing::ValuesIn(testing::IsaTiersWithRef()),
                         testing::IsaTierName);

// A shard of a checkpoint without act-order but with g_idx (k / group):
// whole groups, some of the checkpoint's groups absent from the shard.
TEST(ActOrderShard, ContiguousGroupsAndGroupSize32) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    LayerDesc d = testing::KernelTestDesc(mode, 24, 256, 32, WeightType::kU4,
                                          DType::kF32, DType::kF32, true);
    CheckShardedLayer(d, IsaTier::kAvx2, 2, /*contiguous_groups=*/true,
                      {1, 9, 33}, 61);
    CheckShardedLayer(d, IsaTier::kAvx2, 2, /*contiguous_groups=*/false,
                      {1, 9, 33}, 62);
  }
}

TEST(ActOrderShard, RegroupPadsEachGroupWithZeroWeights) {
  // 12 channels naming groups 0..3 of a group-8 checkpoint: group 0 has 5,
  // group 1 none, group 2 has 6, group 3 one. Sub-groups of 8 (no divisor of
  // 8 is a multiple of 16, and 8 streams the fewest bytes here).
  const std::vector<int32_t> g_idx = {2, 0, 2, 3, 0, 2, 0, 2, 2, 0, 0, 2};
  CanonicalWeights w;
  w.n = 2;
  w.k = 12;
  w.group_size = 8;
  w.groups = 4;
  w.asymmetric = true;
  for (int64_t i = 0; i < w.n * w.k; ++i) w.u.push_back(i % 16);
  for (int64_t i = 0; i < w.n * w.groups; ++i) {
    w.scales.push_back(0.5f + i);
    w.zeros.push_back(static_cast<uint8_t>(3 + i));
  }
  ASSERT_TRUE(internal::RegroupShard(g_idx.data(), 8, 64, &w).ok());
  EXPECT_EQ(w.group_size, 8);
  EXPECT_EQ(w.groups, 3);  // groups 0, 2 and 3; none for the empty group 1
  EXPECT_EQ(w.k, 24);
  const std::vector<int32_t> want_perm = {1, 4,  6, 9, 10, 1, 1, 1, 0, 2, 5, 7,
                                          8, 11, 0, 0, 3,  3, 3, 3, 3, 3, 3, 3};
  EXPECT_EQ(w.k_perm, want_perm);
  for (int64_t n = 0; n < w.n; ++n) {
    const int src[3] = {0, 2, 3};
    for (int j = 0; j < 3; ++j) {
      EXPECT_EQ(w.S(n, j), 0.5f + n * 4 + src[j]);
      EXPECT_EQ(w.Z(n, j), 3 + n * 4 + src[j]);
    }
    for (int64_t j = 0; j < w.k; ++j) {
      const bool pad = (j >= 5 && j < 8) || (j >= 14 && j < 16) || j >= 17;
      const uint8_t want =
          pad ? w.Z(n, j / 8)
              : static_cast<uint8_t>((n * 12 + w.k_perm[j]) % 16);
      EXPECT_EQ(w.U(n, j), want) << "n=" << n << " j=" << j;
    }
  }
}

class ActOrderShardRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    full_ = testing::KernelTestDesc(Mode::kW4A16, 16, 128, 32, WeightType::kS4,
                                    DType::kF32, DType::kF32, false);
    CanonicalWeights w = testing::RandomWeights(full_, 3);
    w.k_perm = testing::RandomActOrder(full_, 4);
    auto c = internal::ExportWeights(full_, w, WeightFormat::kGptqV2);
    ASSERT_TRUE(c.ok()) << c.status();
    part_ = KShard(full_, *c, 2, 1);
    shard_ = full_;
    shard_.k = 64;
  }
  std::string Error(int64_t scale_groups) {
    WeightsView v = part_.view();
    v.scale_groups = scale_groups;
    auto layer = Layer::Create(shard_, v);
    EXPECT_FALSE(layer.ok());
    return layer.ok() ? "" : std::string(layer.status().message());
  }
  LayerDesc full_, shard_;
  OwnedCheckpoint part_;
};

TEST_F(ActOrderShardRefusal, WithoutScaleGroupsTheScalesAreTooFew) {
  // scale_groups 0: the layer's own 2 groups, whose g_idx then runs past.
  part_.g_idx[0] = 3;
  EXPECT_NE(Error(0).find("g_idx[0] = 3 is not a group"), std::string::npos);
}

TEST_F(ActOrderShardRefusal, GroupIndexPastTheScalesIsNamed) {
  part_.g_idx[17] = 4;
  EXPECT_EQ(Error(4),
            "g_idx[17] = 4 is not a group of the scales, which hold 4 groups "
            "(0..3)");
  part_.g_idx[17] = -2;
  EXPECT_EQ(Error(4),
            "g_idx[17] = -2 is not a group of the scales, which hold 4 groups "
            "(0..3)");
}

TEST_F(ActOrderShardRefusal, ScaleGroupsNeedGroupIndexAndEnoughGroups) {
  part_.g_idx.clear();
  EXPECT_NE(Error(4).find("weights.scale_groups = 4 is more than K / "
                          "group_size = 2: a K-shard of an act-order "
                          "checkpoint, which needs g_idx"),
            std::string::npos);
  EXPECT_NE(Error(1).find("weights.scale_groups = 1 must be 0"),
            std::string::npos);
}

TEST_F(ActOrderShardRefusal, OnlyLayerTakesAShard) {
  WeightsView v = part_.view();
  v.scale_groups = 4;
  auto imported = internal::ImportWeights(shard_, v);
  ASSERT_FALSE(imported.ok());
  EXPECT_NE(imported.status().message().find("taken by w4jit::Layer only"),
            std::string::npos)
      << imported.status();
  LayerDesc kd;
  auto regrouped = internal::ImportWeights(shard_, v, &kd);
  ASSERT_TRUE(regrouped.ok()) << regrouped.status();
  EXPECT_EQ(kd.k, regrouped->k);
  EXPECT_EQ(kd.group_size, regrouped->group_size);
  EXPECT_GE(kd.k, shard_.k);
  EXPECT_EQ(regrouped->k_perm.size(), static_cast<size_t>(kd.k));
  for (int32_t c : regrouped->k_perm) {
    EXPECT_GE(c, 0);
    EXPECT_LT(c, shard_.k);
  }
}

TEST_F(ActOrderShardRefusal, FloatZeroPointsAreRefused) {
  LayerDesc d = shard_;
  d.weight_type = WeightType::kU4;
  d.zero_point_domain = ZeroPointDomain::kFloat;
  d.zero_point_dtype = DType::kF32;
  std::vector<int8_t> q(static_cast<size_t>(d.n * d.k), 3);
  std::vector<float> scales(4 * d.n, 0.5f), zeros(4 * d.n, 0.25f);
  WeightsView v;
  v.format = WeightFormat::kUnpackedInt8;
  v.qweight = q.data();
  v.scales = scales.data();
  v.zero_points = zeros.data();
  v.g_idx = part_.g_idx.data();
  v.scale_groups = 4;
  auto layer = Layer::Create(d, v);
  ASSERT_FALSE(layer.ok());
  EXPECT_NE(layer.status().message().find("cannot have float zero points"),
            std::string::npos)
      << layer.status();
}

TEST_F(ActOrderShardRefusal, CApi) {
  w4jit_layer_desc cd;
  w4jit_layer_desc_init(&cd);
  cd.n = shard_.n;
  cd.k = shard_.k;
  cd.group_size = shard_.group_size;
  cd.scale_dtype = static_cast<w4jit_dtype>(shard_.scale_dtype);
  cd.act_dtype = W4JIT_F32;
  cd.out_dtype = W4JIT_F32;
  cd.mode = W4JIT_W4A16;
  w4jit_weights cw{};
  cw.format = W4JIT_FORMAT_GPTQ_V2;
  cw.qweight = part_.qweight.data();
  cw.scales = part_.scales.data();
  cw.g_idx = part_.g_idx.data();
  cw.groups_major = 1;
  w4jit_layer* layer = nullptr;
  EXPECT_EQ(w4jit_layer_create(&cd, &cw, &layer), W4JIT_INVALID_ARGUMENT);
  ASSERT_EQ(w4jit_layer_create_with_scale_groups(&cd, &cw, 4, &layer), W4JIT_OK)
      << w4jit_last_error();
  std::vector<float> x(static_cast<size_t>(shard_.k), 1.0f), y(16, 0.0f);
  EXPECT_EQ(w4jit_layer_run(layer, 1, x.data(), shard_.k, y.data(), 16),
            W4JIT_OK);
  w4jit_layer_destroy(layer);
  part_.g_idx[5] = 7;
  cw.g_idx = part_.g_idx.data();
  EXPECT_EQ(w4jit_layer_create_with_scale_groups(&cd, &cw, 4, &layer),
            W4JIT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(w4jit_last_error()).find("g_idx[5] = 7"),
            std::string::npos);
}

}  // namespace
}  // namespace w4jit
