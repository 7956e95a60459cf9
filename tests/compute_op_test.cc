// Layer::compute_at (w4jit/layer.hpp) and its C and MoE forms: what the
// kernels a Run at M picks multiply with, asked of the layer. The AMX
// kernels are made for the amx tier on every CPU (made, not run), so the
// hand-over by M is checked everywhere.
#include <cstdint>
#include <string>

#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "gtest/gtest.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/jit_kernels.h"
#include "runtime/w4a16/w4a16_params.h"
#include "tests/util/test_layer.h"
#include "w4jit/w4jit.h"

namespace w4jit {
namespace {

using internal::IsaTier;

bool NamesSay(const Layer& layer, const std::string& part) {
  for (const std::string& n : layer.kernel_names()) {
    if (n.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST(ComputeOp, Names) {
  EXPECT_STREQ(ToString(ComputeOp::kScalar), "scalar");
  EXPECT_STREQ(ToString(ComputeOp::kF32Fma), "f32_fma");
  EXPECT_STREQ(ToString(ComputeOp::kBf16Dot), "bf16_dot");
  EXPECT_STREQ(ToString(ComputeOp::kInt8Dot), "int8_dot");
  EXPECT_STREQ(ToString(ComputeOp::kAmxBf16), "amx_bf16");
  EXPECT_STREQ(ToString(ComputeOp::kAmxInt8), "amx_int8");
}

TEST(ComputeOp, ReferenceIsScalar) {
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    const LayerDesc desc = testing::KernelTestDesc(
        mode, 64, 256, 128, WeightType::kS4, DType::kBF16, DType::kBF16, false);
    LayerOptions opt;
    opt.force_reference = true;
    auto layer = testing::MakeLayer(desc, testing::RandomWeights(desc, 1), opt);
    ASSERT_TRUE(layer.ok()) << layer.status();
    const LayerCompute c = (*layer)->compute_at(16);
    EXPECT_EQ(c.op, ComputeOp::kScalar);
    EXPECT_EQ(c.vector_bits, 0);
  }
}

// The vector kernels of the host's default layer say what their names say.
TEST(ComputeOp, VectorKernelsMatchTheirNames) {
  internal::ScopedIsaCap cap(IsaTier::kAvx512Bf16);
  for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
    const LayerDesc desc = testing::KernelTestDesc(
        mode, 64, 256, 128, WeightType::kS4, DType::kBF16, DType::kBF16, false);
    auto layer = testing::MakeLayer(desc, testing::RandomWeights(desc, 1));
    ASSERT_TRUE(layer.ok()) << layer.status();
    if (NamesSay(**layer, "reference")) GTEST_SKIP() << "no JIT kernels here";
    for (const int64_t m : {int64_t{0}, int64_t{1}, int64_t{64}}) {
      const LayerCompute c = (*layer)->compute_at(m);
      EXPECT_EQ(c.vector_bits, NamesSay(**layer, "__avx512") ? 512 : 256);
      if (mode == Mode::kDA8W4) {
        EXPECT_EQ(c.op, ComputeOp::kInt8Dot);
      } else {
        EXPECT_EQ(c.op, NamesSay(**layer, "bf16dot") ? ComputeOp::kBf16Dot
                                                     : ComputeOp::kF32Fma);
      }
    }
  }
}

// W4A16 and DA8W4 made for the amx tier hand M >= amx_min_m to the tiles.
TEST(ComputeOp, TilesFromAmxMinM) {
  const internal::CpuProfile& cpu = internal::HostCpu();
  const LayerDesc w4 =
      testing::KernelTestDesc(Mode::kW4A16, 64, 512, 128, WeightType::kS4,
                              DType::kBF16, DType::kBF16, false);
  internal::W4a16Params wp = internal::DefaultW4a16Params(cpu, IsaTier::kAmx);
  wp.flavor = internal::Flavor::kF32Fma;
  wp.amx_min_m = 24;
  std::string why;
  auto w4k = internal::MakeW4a16JitKernel(w4, testing::RandomWeights(w4, 2),
                                          cpu, IsaTier::kAmx, wp, &why);
  ASSERT_TRUE(w4k.ok() && *w4k != nullptr) << why;
  EXPECT_EQ((*w4k)->compute_at(23).op, ComputeOp::kF32Fma);
  EXPECT_EQ((*w4k)->compute_at(23).vector_bits, wp.vector_bits);
  EXPECT_EQ((*w4k)->compute_at(24).op, ComputeOp::kAmxBf16);
  EXPECT_EQ((*w4k)->compute_at(24).vector_bits, 0);

  LayerDesc d8 = w4;
  d8.mode = Mode::kDA8W4;
  internal::Da8w4Params dp = internal::DefaultDa8w4Params(cpu, IsaTier::kAmx);
  dp.amx_min_m = 24;
  dp.handover_m = 0;
  auto d8k = internal::MakeDa8w4JitKernel(d8, testing::RandomWeights(d8, 3),
                                          cpu, IsaTier::kAmx, dp, &why);
  ASSERT_TRUE(d8k.ok() && *d8k != nullptr) << why;
  EXPECT_EQ((*d8k)->compute_at(23).op, ComputeOp::kInt8Dot);
  EXPECT_EQ((*d8k)->compute_at(23).vector_bits, 512);
  EXPECT_EQ((*d8k)->compute_at(24).op, ComputeOp::kAmxInt8);
}

TEST(ComputeOp, CApiChecksItsArguments) {
  w4jit_compute_op op = W4JIT_COMPUTE_SCALAR;
  int bits = -1;
  EXPECT_EQ(w4jit_layer_compute_at(nullptr, 1, &op, &bits),
            W4JIT_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace w4jit
