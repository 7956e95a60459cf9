// Float zero points (ZeroPointDomain::kFloat, w = (u - 8) * s + zf) and
// the tinygemm-int4pack format (torch's CPU int4pack, torchao's int4
// weight-only checkpoints): the format's byte layout and round trip, the
// validation errors, and every W4A16 JIT tier against the reference.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "dispatch/cpu_profile.h"
#include "gtest/gtest.h"
#include "runtime/formats/import.h"
#include "runtime/formats/tinygemm_int4pack.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/isa.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"
#include "w4jit/w4jit.hpp"

namespace w4jit {
namespace {

using internal::BlockRows;
using internal::CanonicalWeights;
using internal::CheckInt4PackShape;
using internal::ExportWeights;
using internal::Flavor;
using internal::ImportWeights;
using internal::Int4PackBlocking;
using internal::Int4PackBlockingFor;
using internal::IsaTier;
using internal::OwnedCheckpoint;
using internal::PackTinygemmInt4Pack;
using internal::ScopedIsaCap;
using internal::ScopedW4a16ParamsOverride;
using internal::UnpackTinygemmInt4Pack;
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

// torch's packer as int4mm_kernel.cpp's comment and loop describe it,
// written from that description (independently of the format's code):
// blocks of B rows (64 for AVX512, 32 otherwise), block b at byte
// b * B * K / 2; per k, a full block of a vector capability splits its
// rows in halves (byte j = row j | row j + B/2 << 4), any other block
// (DEFAULT, and a last block of nb < B rows) pairs adjacent rows (byte j =
// row 2j | row 2j + 1 << 4).
std::vector<uint8_t> TorchPackerModel(const std::vector<uint8_t>& u, int64_t n,
                                      int64_t k, int block, bool vector) {
  std::vector<uint8_t> out(static_cast<size_t>(n * k / 2), 0xEE);
  for (int64_t b = 0; b * block < n; ++b) {
    const int64_t nb = std::min<int64_t>(block, n - b * block);
    const uint8_t* src = u.data() + b * block * k;
    uint8_t* dst = out.data() + b * block * k / 2;
    for (int64_t kk = 0; kk < k; ++kk) {
      if (vector && nb == block) {
        for (int64_t j = 0; j < block / 2; ++j) {
          dst[kk * block / 2 + j] = static_cast<uint8_t>(
              src[j * k + kk] | (src[(j + block / 2) * k + kk] << 4));
        }
      } else {
        for (int64_t r = 0; r < nb; r += 2) {
          dst[kk * nb / 2 + r / 2] = static_cast<uint8_t>(
              src[r * k + kk] | (src[(r + 1) * k + kk] << 4));
        }
      }
    }
  }
  return out;
}

TEST(TinygemmInt4Pack, EveryLayoutMatchesTorchsPackerInclTails) {
  struct Case {
    Int4PackBlocking blocking;
    int block;
    bool vector;
  };
  for (const Case& c : {Case{Int4PackBlocking::kAvx512, 64, true},
                        Case{Int4PackBlocking::kAvx2, 32, true},
                        Case{Int4PackBlocking::kDefault, 32, false}}) {
    // Every N % 64 and N % 32 tail torch allows (N % 16 == 0), K even.
    for (int64_t n : {16, 32, 48, 64, 80, 96, 112, 128, 144, 208}) {
      for (int64_t k : {2, 6, 64}) {
        SCOPED_TRACE(absl::StrFormat("block %d vector %d N %d K %d", c.block,
                                     c.vector, n, k));
        std::vector<uint8_t> u(static_cast<size_t>(n * k));
        for (size_t i = 0; i < u.size(); ++i) {
          u[i] = static_cast<uint8_t>((i * 7 + i / 13) % 16);
        }
        const std::vector<uint8_t> want =
            TorchPackerModel(u, n, k, c.block, c.vector);
        std::vector<uint8_t> packed(want.size());
        PackTinygemmInt4Pack(u.data(), n, k, c.blocking, packed.data());
        EXPECT_EQ(packed, want);
        std::vector<uint8_t> back(u.size());
        UnpackTinygemmInt4Pack(want.data(), n, k, c.blocking, back.data());
        EXPECT_EQ(back, u);
      }
    }
  }
}

TEST(TinygemmInt4Pack, SpotChecksOfTheLayouts) {
  // N = 48, K = 2: AVX512 has one 48-row block of adjacent pairs; AVX2 a
  // 32-row split block and a 16-row pair block; DEFAULT 32 + 16 of pairs.
  const int64_t n = 48, k = 2;
  std::vector<uint8_t> u(n * k);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < k; ++c) u[r * k + c] = (r + 3 * c) % 16;
  }
  auto at = [&](Int4PackBlocking b, int64_t byte) {
    std::vector<uint8_t> p(n * k / 2);
    PackTinygemmInt4Pack(u.data(), n, k, b, p.data());
    return p[byte];
  };
  auto pair = [&](int64_t lo, int64_t hi, int64_t col) {
    return static_cast<uint8_t>(u[lo * k + col] | (u[hi * k + col] << 4));
  };
  // AVX2, block 0, k = 1, byte 3: rows 3 and 19.
  EXPECT_EQ(at(Int4PackBlocking::kAvx2, 16 + 3), pair(3, 19, 1));
  // AVX2, block 1 (rows 32..47, 16 rows: pairs) at byte 32 * 2 / 2 = 32;
  // k = 1, byte 2: rows 36 and 37.
  EXPECT_EQ(at(Int4PackBlocking::kAvx2, 32 + 8 + 2), pair(36, 37, 1));
  // DEFAULT, block 0, k = 0, byte 5: rows 10 and 11.
  EXPECT_EQ(at(Int4PackBlocking::kDefault, 5), pair(10, 11, 0));
  // AVX512, the single 48-row block, k = 1, byte 4: rows 8 and 9.
  EXPECT_EQ(at(Int4PackBlocking::kAvx512, 24 + 4), pair(8, 9, 1));
}

TEST(TinygemmInt4Pack, CapabilitiesAndShapes) {
  EXPECT_EQ(*Int4PackBlockingFor("AVX512"), Int4PackBlocking::kAvx512);
  EXPECT_EQ(*Int4PackBlockingFor("avx512"), Int4PackBlocking::kAvx512);
  EXPECT_EQ(*Int4PackBlockingFor("AVX2"), Int4PackBlocking::kAvx2);
  EXPECT_EQ(*Int4PackBlockingFor("DEFAULT"), Int4PackBlocking::kDefault);
  EXPECT_EQ(*Int4PackBlockingFor("default"), Int4PackBlocking::kDefault);
  EXPECT_EQ(BlockRows(Int4PackBlocking::kAvx512), 64);
  EXPECT_EQ(BlockRows(Int4PackBlocking::kAvx2), 32);
  EXPECT_EQ(BlockRows(Int4PackBlocking::kDefault), 32);
  for (const char* bad : {"SVE256", "ZVECTOR", "", "avx"}) {
    const auto b = Int4PackBlockingFor(bad);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_NE(b.status().message().find(absl::StrFormat("'%s'", bad)),
              std::string::npos)
        << b.status();
  }
  EXPECT_TRUE(CheckInt4PackShape(16, 2).ok());
  EXPECT_NE(CheckInt4PackShape(40, 8).message().find("N = 40"),
            std::string::npos);
  EXPECT_NE(CheckInt4PackShape(0, 8).message().find("N = 0"),
            std::string::npos);
  EXPECT_NE(CheckInt4PackShape(64, 7).message().find("K = 7"),
            std::string::npos);
}

TEST(TinygemmFormat, LayerFormatIsTheAvx512LayoutWithTails) {
  // N = 80: one 64-row block and a 16-row tail of adjacent pairs, as
  // torch's AVX-512 packer writes them.
  const LayerDesc d =
      FloatZeroDesc(80, 8, -1, DType::kBF16, DType::kBF16, DType::kBF16, false);
  const CanonicalWeights w = RandomWeights(d, 3);
  absl::StatusOr<OwnedCheckpoint> ckpt =
      ExportWeights(d, w, WeightFormat::kTinygemmInt4Pack);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->qweight, TorchPackerModel(w.u, 80, 8, 64, true));
  absl::StatusOr<CanonicalWeights> back = ImportWeights(d, ckpt->view());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->u, w.u);
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
    d.n = 40;
    EXPECT_NE(CreateError(d, WeightFormat::kTinygemmInt4Pack, d)
                  .find("N = 40 is not a positive multiple of 16"),
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
    if (!testing::StartIsaPathRun(GetParam())) {
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
