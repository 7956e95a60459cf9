// Float zero points (ZeroPointDomain::kFloat, w = (u - 8) * s + zf) and
// the tinygemm-int4pack format (torch's CPU int4pack, torchao's int4
// weight-only checkpoints): the format's byte layout and round trip, the
// validation errors, and every W4A16 JIT tier against the reference.
#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/formats/import.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

namespace w4jit {
namespace {

using internal::CanonicalWeights;
using internal::ExportWeights;
using internal::Flavor;
using internal::ImportWeights;
using internal::IsaTier;
using internal::OwnedCheckpoint;
using internal::ScopedIsaCap;
using internal::ScopedW4a16ParamsOverride;
using internal::W4a16Params;
using testing::Describe;
using testing::KernelNameIs;
using testing::RandomActivations;
using testing::RandomWeights;
using testing::RunAndCheck;
using testing::WhyCannotRunTier;

LayerDesc FloatZeroDesc(int64_t n, int64_t k, int64_t group, DType act,
                        DType out, DType zp, bool bias) {
  LayerDesc d = testing::KernelTestDesc(Mode::kW4A16, n, k, group,
                                        WeightType::kU4, act, out, bias);
  d.zero_point_domain = ZeroPointDomain::kFloat;
  d.zero_point_dtype = zp;
  return d;
}

// The layer made from `w` exported in `format`.
absl::StatusOr<std::unique_ptr<Layer>> LayerFrom(const LayerDesc& desc,
                                                 const CanonicalWeights& w,
                                                 WeightFormat format) {
  absl::StatusOr<OwnedCheckpoint> ckpt = ExportWeights(desc, w, format);
  if (!ckpt.ok()) return ckpt.status();
  return Layer::Create(desc, ckpt->view());
}

TEST(TinygemmFormat, BytesFollowTorchsInt4PackLayout) {
  // Row r of a 64-row block, column k: byte k * 32 + 16 * (r / 16 % 2) +
  // r % 16, low nibble for r < 32 (aten weight_to_int4pack_kernel, AVX-512).
  const LayerDesc d = FloatZeroDesc(128, 6, -1, DType::kBF16, DType::kBF16,
                                    DType::kBF16, false);
  CanonicalWeights w = RandomWeights(d, 5);
  absl::StatusOr<OwnedCheckpoint> ckpt =
      ExportWeights(d, w, WeightFormat::kTinygemmInt4Pack);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  ASSERT_EQ(ckpt->qweight.size(), size_t{128 * 6 / 2});
  for (int64_t n = 0; n < 128; ++n) {
    for (int64_t k = 0; k < 6; ++k) {
      const int64_t r = n % 64;
      const int64_t byte =
          (n / 64) * 6 * 32 + k * 32 + (r % 32 >= 16 ? 16 : 0) + r % 16;
      const int nibble =
          r >= 32 ? (ckpt->qweight[byte] >> 4) : (ckpt->qweight[byte] & 0xF);
      ASSERT_EQ(nibble, w.U(n, k)) << "n = " << n << ", k = " << k;
    }
  }
  // Byte d holds rows d and d + 32, byte 16 + d rows d + 16 and d + 48.
  EXPECT_EQ(ckpt->qweight[3], w.U(3, 0) | (w.U(35, 0) << 4));
  EXPECT_EQ(ckpt->qweight[19], w.U(19, 0) | (w.U(51, 0) << 4));
  EXPECT_EQ(ckpt->qweight[32 + 19], w.U(19, 1) | (w.U(51, 1) << 4));
}

TEST(TinygemmFormat, RoundTripsBothZeroDtypes) {
  for (DType zp : {DType::kBF16, DType::kF32}) {
    for (int64_t group : {int64_t{-1}, int64_t{32}}) {
      const LayerDesc d =
          FloatZeroDesc(192, 64, group, DType::kBF16, DType::kF32, zp, true);
      SCOPED_TRACE(Describe(d));
      const CanonicalWeights w = RandomWeights(d, 9);
      for (WeightFormat f :
           {WeightFormat::kTinygemmInt4Pack, WeightFormat::kUnpackedInt8,
            WeightFormat::kZentorchInt32}) {
        SCOPED_TRACE(ToString(f));
        absl::StatusOr<OwnedCheckpoint> ckpt = ExportWeights(d, w, f);
        ASSERT_TRUE(ckpt.ok()) << ckpt.status();
        absl::StatusOr<CanonicalWeights> back = ImportWeights(d, ckpt->view());
        ASSERT_TRUE(back.ok()) << back.status();
        EXPECT_EQ(back->u, w.u);
        EXPECT_EQ(back->scales, w.scales);
        EXPECT_EQ(back->float_zeros, w.float_zeros);
        EXPECT_EQ(back->zeros, std::vector<uint8_t>(w.zeros.size(), 8));
        EXPECT_EQ(back->bias, w.bias);
      }
    }
  }
}

// The error of creating `d` from a valid checkpoint in `format` (made for
// `made_as`, which may differ from d), edited by `edit`.
std::string CreateError(const LayerDesc& d, WeightFormat format,
                        const LayerDesc& made_as,
                        void (*edit)(OwnedCheckpoint*) = nullptr) {
  absl::StatusOr<OwnedCheckpoint> ckpt =
      ExportWeights(made_as, RandomWeights(made_as, 1), format);
  if (!ckpt.ok()) return std::string(ckpt.status().message());
  if (edit != nullptr) edit(&*ckpt);
  auto layer = Layer::Create(d, ckpt->view());
  return layer.ok() ? "" : std::string(layer.status().message());
}

TEST(FloatZeroValidation, ClearErrors) {
  const LayerDesc good = FloatZeroDesc(64, 64, 32, DType::kBF16, DType::kBF16,
                                       DType::kBF16, false);
  {
    LayerDesc d = good;
    d.n = 96;
    EXPECT_NE(CreateError(d, WeightFormat::kTinygemmInt4Pack, d)
                  .find("N = 96 is not a multiple of 64"),
              std::string::npos);
  }
  {
    LayerDesc d = good;
    d.mode = Mode::kDA8W4;
    const std::string e = CreateError(d, WeightFormat::kUnpackedInt8, good);
    EXPECT_NE(e.find("zero_point_domain = float"), std::string::npos) << e;
    EXPECT_NE(e.find("DA8W4"), std::string::npos) << e;
  }
  {
    LayerDesc d = good;
    d.zero_point_dtype = DType::kF16;
    const std::string e = CreateError(d, WeightFormat::kUnpackedInt8, good);
    EXPECT_NE(e.find("zero_point_dtype = f16"), std::string::npos) << e;
  }
  {
    LayerDesc d = good;
    d.weight_type = WeightType::kS4;
    const std::string e = CreateError(d, WeightFormat::kUnpackedInt8, good);
    EXPECT_NE(e.find("needs weight_type u4"), std::string::npos) << e;
  }
  {
    LayerDesc d = good;
    d.zero_point_domain = static_cast<ZeroPointDomain>(7);
    const std::string e = CreateError(d, WeightFormat::kUnpackedInt8, good);
    EXPECT_NE(e.find("zero_point_domain = 7"), std::string::npos) << e;
  }
  {
    // tinygemm holds float zero points only.
    LayerDesc integer = good;
    integer.zero_point_domain = ZeroPointDomain::kInteger;
    const std::string e =
        CreateError(integer, WeightFormat::kTinygemmInt4Pack, good);
    EXPECT_NE(e.find("zero_point_domain integer"), std::string::npos) << e;
  }
  {
    // GPTQ's packed zero points are integers.
    const std::string e = CreateError(good, WeightFormat::kGptqV2, good);
    EXPECT_NE(e.find("gptq-v2 format stores integer zero points"),
              std::string::npos)
        << e;
  }
  {
    // A NaN float zero point (bf16 0x7FC0) names its place.
    const std::string e = CreateError(good, WeightFormat::kTinygemmInt4Pack,
                                      good, [](OwnedCheckpoint* c) {
                                        c->zero_points[2 * (64 + 5)] = 0xC0;
                                        c->zero_points[2 * (64 + 5) + 1] = 0x7F;
                                      });
    EXPECT_NE(e.find("zero_points[g = 1, n = 5] = nan"), std::string::npos)
        << e;
  }
  {
    // The C API carries the domain.
    w4jit_layer_desc c;
    w4jit_layer_desc_init(&c);
    EXPECT_EQ(c.zero_point_domain, W4JIT_ZP_INTEGER);
  }
}

// Checks layers of float zero points made from `format` for each M.
void CheckFloatZero(const LayerDesc& desc, WeightFormat format,
                    const std::vector<int64_t>& ms, std::string_view isa,
                    std::string_view flavour, int64_t ldx_pad = 0,
                    int64_t ldy_pad = 0) {
  SCOPED_TRACE(Describe(desc) + " " + ToString(format));
  const CanonicalWeights w =
      RandomWeights(desc, static_cast<uint32_t>(desc.n * 3 + desc.k));
  auto layer = LayerFrom(desc, w, format);
  ASSERT_TRUE(layer.ok()) << layer.status();
  const std::vector<std::string> names = (*layer)->kernel_names();
  ASSERT_FALSE(names.empty());
  EXPECT_NE(names[0].find("_s4fz_"), std::string::npos) << names[0];
  EXPECT_TRUE(KernelNameIs(names[0], flavour, isa));
  const int64_t ldx = desc.k + ldx_pad, ldy = desc.n + ldy_pad;
  for (int64_t m : ms) {
    SCOPED_TRACE("M = " + std::to_string(m));
    const auto x = RandomActivations(desc, m, ldx, static_cast<uint32_t>(m));
    EXPECT_TRUE(RunAndCheck(**layer, w, m, x, ldx, ldy));
  }
}

class FloatZeroTiers : public ::testing::TestWithParam<testing::IsaPath> {
 protected:
  void SetUp() override {
    if (!testing::StartIsaRun(GetParam().tier)) {
      GTEST_SKIP() << WhyCannotRunTier(GetParam().tier);
    }
  }
  // The tier's kernels with `edit` applied on top.
  void Check(const LayerDesc& desc, WeightFormat format,
             const std::vector<int64_t>& ms,
             void (*edit)(W4a16Params*) = nullptr, int64_t ldx_pad = 0,
             int64_t ldy_pad = 0) {
    const testing::IsaPath t = GetParam();
    ScopedIsaCap cap(t.tier);
    ScopedW4a16ParamsOverride o([t, edit](W4a16Params* p) {
      p->flavor = t.flavor;
      p->vector_bits = t.vector_bits;
      if (edit != nullptr) edit(p);
    });
    LayerDesc d = desc;
    // The bf16-dot flavour multiplies bf16 x; f32 x must allow rounding.
    if (t.flavor == Flavor::kBf16Dot) d.allow_bf16_compute = true;
    CheckFloatZero(d, format, ms, t.suffix, t.flavour, ldx_pad, ldy_pad);
  }
};

std::vector<int64_t> MixedMs() {
  std::vector<int64_t> ms;
  for (int64_t m = 1; m <= 17; ++m) ms.push_back(m);
  ms.push_back(64);
  ms.push_back(255);
  return ms;
}

TEST_P(FloatZeroTiers, TinygemmGroupsDtypesBothPaths) {
  for (int64_t group : {int64_t{32}, int64_t{128}, int64_t{-1}}) {
    for (DType zp : {DType::kBF16, DType::kF32}) {
      Check(FloatZeroDesc(128, 256, group, DType::kBF16, DType::kBF16, zp,
                          group == 32),
            WeightFormat::kTinygemmInt4Pack, MixedMs(), nullptr, 3, 5);
    }
  }
  // group = K, N = 192 (three 64-row blocks), f32 in and out.
  Check(FloatZeroDesc(192, 128, 128, DType::kF32, DType::kF32, DType::kBF16,
                      false),
        WeightFormat::kTinygemmInt4Pack, {1, 2, 7, 40});
}

TEST_P(FloatZeroTiers, NTailsFromUnpackedInt8) {
  // Float zero points beside unpacked or zentorch weights: any N.
  for (int64_t n : {int64_t{5}, int64_t{37}, int64_t{100}}) {
    Check(
        FloatZeroDesc(n, 64, 32, DType::kBF16, DType::kF32, DType::kF32, true),
        WeightFormat::kUnpackedInt8, {1, 3, 11, 40});
  }
  Check(FloatZeroDesc(72, 128, -1, DType::kF32, DType::kBF16, DType::kBF16,
                      false),
        WeightFormat::kZentorchInt32, {1, 9, 33});
}

TEST_P(FloatZeroTiers, ForcedTilesAndPanels) {
  const LayerDesc d = FloatZeroDesc(128, 256, 64, DType::kBF16, DType::kBF16,
                                    DType::kF32, true);
  const std::vector<int64_t> ms = {1, 2, 5, 9, 24};
  Check(d, WeightFormat::kTinygemmInt4Pack, ms,
        [](W4a16Params* p) { p->gemm_min_m = 1000; });
  Check(d, WeightFormat::kTinygemmInt4Pack, ms,
        [](W4a16Params* p) { p->gemm_min_m = 1; });
  Check(d, WeightFormat::kTinygemmInt4Pack, ms, [](W4a16Params* p) {
    p->kc = 48;  // K blocks shorter than the group
    p->mc = 6;
    p->gemm_min_m = 1;
  });
  Check(d, WeightFormat::kTinygemmInt4Pack, ms, [](W4a16Params* p) {
    p->tall_mr = 8;  // tall 8 x 1
    p->tall_vectors = 1;
    p->tall_min_m = 2;
    p->gemm_min_m = 1000;
  });
  Check(d, WeightFormat::kTinygemmInt4Pack, ms, [](W4a16Params* p) {
    p->tall_mr = 5;  // all vectors decoded first (AVX2)
    p->tall_vectors = 2;
    p->tall_min_m = 3;
    p->gemm_min_m = 20;
  });
  Check(d, WeightFormat::kTinygemmInt4Pack, ms, [](W4a16Params* p) {
    p->tall_mr = 3;  // two chains per accumulator
    p->tall_vectors = 2;
    p->tall_min_m = 2;
    p->gemm_min_m = 1000;
  });
}

INSTANTIATE_TEST_SUITE_P(
    Tiers, FloatZeroTiers, ::testing::ValuesIn(testing::IsaPaths()),
    [](const ::testing::TestParamInfo<testing::IsaPath>& i) {
      return std::string(i.param.suffix) + "_" + i.param.flavour;
    });

TEST(FloatZeroEpilogue, FusedPostOpsSeeTheZeroTerm) {
  // The zero term joins t before the activation and binary post-ops; with
  // silu_mul the [gate | up] columns are interleaved, zf with them.
  for (bool silu_mul : {false, true}) {
    LayerDesc d = FloatZeroDesc(128, 128, 32, DType::kBF16, DType::kBF16,
                                DType::kBF16, true);
    if (silu_mul) {
      d.epilogue.silu_mul = true;
    } else {
      d.epilogue.activation = Activation::kGeluTanh;
    }
    d.epilogue.num_binary = 1;
    d.epilogue.binary[0] = {BinaryOp::kAdd, DType::kBF16};
    SCOPED_TRACE(Describe(d));
    const CanonicalWeights w = RandomWeights(d, 4);
    auto layer = LayerFrom(d, w, WeightFormat::kTinygemmInt4Pack);
    ASSERT_TRUE(layer.ok()) << layer.status();
    for (int64_t m : {1, 6, 70}) {
      const auto x = RandomActivations(d, m, d.k, 8);
      const check::EpilogueOperands ops =
          check::RandomEpilogueOperands(d, m, 2, 3);
      const check::CheckResult r = check::CheckRun(**layer, w, m, x.data(), d.k,
                                                   d.out_n(), nullptr, &ops);
      EXPECT_TRUE(r.ok()) << "M = " << m << "\n" << r.report;
    }
  }
}

}  // namespace
}  // namespace w4jit
