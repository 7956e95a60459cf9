// Differential fuzzing of layer creation and Run: a layer descriptor and
// checkpoint tensors of every format built from the fuzzer's bytes (sizes
// consistent with the descriptor, contents arbitrary), run on a small M on
// this CPU's best ISA tier (the AMX tiles too, from their amx_min_m) and
// checked element by element against the reference wherever the inputs are
// finite (DA8W4 also with NaN/Inf rows, which it defines). Creation must either succeed or return a clean error.
// One input in eight builds a MoE layer instead (fuzz/moe_fuzz.h).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <vector>

#include "base/numeric.h"
#include "check/layer_check.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/moe_fuzz.h"
#include "runtime/formats/import.h"
#include "w4jit/w4jit.hpp"

namespace w4jit::fuzz {
namespace {

constexpr WeightFormat kFormats[] = {WeightFormat::kUnpackedInt8,
                                     WeightFormat::kZentorchInt32,
                                     WeightFormat::kCompressedTensors,
                                     WeightFormat::kGptqV1,
                                     WeightFormat::kGptqV2,
                                     WeightFormat::kAwqGemm,
                                     WeightFormat::kTinygemmInt4Pack};
constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
constexpr int64_t kGroups[] = {-1, 4, 8, 32, 128, 2, 3, 6, 12, 20, 64};

// Magnitudes below this cannot overflow f32 anywhere in either mode (the
// largest product is about 2^40 * 2^40 * 2^21), so kernel and reference
// must agree within tolerance.
constexpr double kSafeMagnitude = 1099511627776.0;  // 2^40

LayerDesc ConsumeDesc(FuzzedDataProvider* fdp, WeightFormat format) {
  LayerDesc d;
  d.mode = fdp->ConsumeBool() ? Mode::kDA8W4 : Mode::kW4A16;
  d.weight_type = fdp->ConsumeBool() ? WeightType::kU4 : WeightType::kS4;
  d.scale_dtype = fdp->PickValueInArray(kDtypes);
  d.act_dtype = fdp->ConsumeBool() ? DType::kF32 : DType::kBF16;
  d.out_dtype = fdp->ConsumeBool() ? DType::kF32 : DType::kBF16;
  d.has_bias = fdp->ConsumeBool();
  d.bias_dtype = fdp->ConsumeBool() ? DType::kF32 : DType::kBF16;
  d.allow_bf16_compute = fdp->ConsumeBool();
  d.n = fdp->ConsumeIntegralInRange<int64_t>(1, 72);
  if (fdp->ConsumeIntegralInRange(0, 9) == 0) {
    // Anything, for the validation.
    d.k = fdp->ConsumeIntegralInRange<int64_t>(-2, 600);
    d.group_size = fdp->ConsumeIntegralInRange<int64_t>(-3, 600);
    return d;
  }
  d.group_size = fdp->ConsumeBool()
                     ? fdp->PickValueInArray(kGroups)
                     : fdp->ConsumeIntegralInRange<int64_t>(1, 40);
  const int64_t groups = fdp->ConsumeIntegralInRange<int64_t>(1, 8);
  d.k = d.group_size == -1 ? fdp->ConsumeIntegralInRange<int64_t>(1, 520)
                           : d.group_size * groups;
  if (fdp->ConsumeIntegralInRange(0, 4) != 0) {
    // Mostly shapes the format can hold.
    const bool k8 = format != WeightFormat::kUnpackedInt8 &&
                    format != WeightFormat::kAwqGemm;
    const bool n8 = format == WeightFormat::kAwqGemm ||
                    (d.weight_type == WeightType::kU4 &&
                     format != WeightFormat::kUnpackedInt8 &&
                     format != WeightFormat::kZentorchInt32);
    if (k8 && d.k % 8 != 0) {
      if (d.group_size == -1) {
        d.k = (d.k + 7) / 8 * 8;
      } else {
        d.k = d.group_size * 8;
      }
    }
    if (n8) d.n = (d.n + 7) / 8 * 8;
    if (format == WeightFormat::kTinygemmInt4Pack) {
      // 64-row blocks (the last one a tail when N % 64 != 0), two k per
      // byte, u4 with float zero points; torch needs N % 16 == 0.
      d.n = (d.n + 15) / 16 * 16;
      if (d.k % 2 != 0) d.k = d.group_size == -1 ? d.k + 1 : 2 * d.k;
      if (d.group_size != -1 && d.k % d.group_size != 0) d.group_size = -1;
      d.weight_type = WeightType::kU4;
      d.zero_point_domain = ZeroPointDomain::kFloat;
    }
  }
  // Float zero points (w = (u - 8) * s + zf) in some runs, of any format:
  // those without them must refuse cleanly.
  if (fdp->ConsumeIntegralInRange(0, 3) == 0) {
    d.zero_point_domain = ZeroPointDomain::kFloat;
  }
  d.zero_point_dtype = fdp->ConsumeBool() ? DType::kBF16 : DType::kF32;
  return d;
}

void RunOne(FuzzedDataProvider* fdp) {
  // One input in eight is a MoE layer (fuzz/moe_fuzz.h).
  if (fdp->ConsumeIntegralInRange(0, 7) == 0) {
    RunMoeOne(fdp);
    return;
  }
  const WeightFormat format = fdp->PickValueInArray(kFormats);
  const bool groups_major = fdp->ConsumeBool();
  LayerDesc desc = ConsumeDesc(fdp, format);
  // Up to 40 rows: past the AMX tiles' amx_min_m (W4A16 12, DA8W4 24) and
  // their 32-row tile, where the CPU has them.
  const int64_t m = fdp->ConsumeIntegralInRange<int64_t>(1, 40);
  const int64_t ldx = desc.k + fdp->ConsumeIntegralInRange<int64_t>(0, 3);
  const int64_t ldy = desc.n + fdp->ConsumeIntegralInRange<int64_t>(0, 3);
  // A fused epilogue in some runs: an activation or silu_mul (even N), and
  // up to two mul/add operands.
  if (fdp->ConsumeIntegralInRange(0, 3) == 0) {
    Epilogue& e = desc.epilogue;
    e.silu_mul = desc.n % 2 == 0 && fdp->ConsumeBool();
    if (!e.silu_mul) {
      e.activation = static_cast<Activation>(fdp->ConsumeIntegralInRange(0, 5));
    }
    e.num_binary = fdp->ConsumeIntegralInRange(0, 2);
    for (int i = 0; i < e.num_binary; ++i) {
      e.binary[i].op = fdp->ConsumeBool() ? BinaryOp::kMul : BinaryOp::kAdd;
      e.binary[i].dtype = fdp->ConsumeBool() ? DType::kBF16 : DType::kF32;
    }
  }
  // DA8W4: per-group activation scales in half the runs.
  if (desc.mode == Mode::kDA8W4 && fdp->ConsumeBool()) {
    desc.act_quant = ActQuant::kPerGroup;
  }
  const FuzzedCheckpoint ckpt = MakeCheckpoint(fdp, desc, format);
  WeightsView view = ckpt.view(format, groups_major);
  if (desc.weight_type == WeightType::kS4) view.zero_points = nullptr;
  if (!desc.has_bias) view.bias = nullptr;

  absl::StatusOr<std::unique_ptr<Layer>> layer = Layer::Create(desc, view);
  absl::StatusOr<internal::CanonicalWeights> w =
      internal::ImportWeights(desc, view);
  if (layer.ok() != w.ok()) {
    Fail(absl::StrCat(
        "Layer::Create and ImportWeights disagree: ", layer.status().ToString(),
        " vs ", w.status().ToString()));
  }
  if (!layer.ok()) {
    if (layer.status().message().empty()) Fail("an error without a message");
    return;
  }
  if (desc.k <= 0 || ldx <= 0 || ldx > 4096 + 3) return;

  // x: the fuzzer's bytes as raw f32/bf16 (NaN, Inf, denormals included),
  // padding columns NaN.
  const size_t xsize = internal::DTypeSize(desc.act_dtype);
  std::vector<uint8_t> x =
      fdp->ConsumeBytes<uint8_t>(static_cast<size_t>(m * ldx) * xsize);
  x.resize(static_cast<size_t>(m * ldx) * xsize, 0x3f);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = desc.k; j < ldx; ++j) {
      internal::StoreFromF32(x.data(), desc.act_dtype, i * ldx + j, NAN);
    }
  }

  bool x_safe = true;
  for (int64_t i = 0; i < m; ++i) {
    x_safe = x_safe && MaxAbs(x.data() + i * ldx * xsize, desc.act_dtype,
                              desc.k) < kSafeMagnitude;
  }
  bool w_safe = true;
  for (float s : w->scales) w_safe = w_safe && std::fabs(s) < kSafeMagnitude;
  for (float b : w->bias) w_safe = w_safe && std::fabs(b) < kSafeMagnitude;
  for (float z : w->float_zeros) {
    w_safe = w_safe && std::fabs(z) < kSafeMagnitude;
  }
  const bool checkable = w_safe && (x_safe || desc.mode == Mode::kDA8W4);
  const check::EpilogueOperands ops = check::RandomEpilogueOperands(
      desc, m, fdp->ConsumeIntegralInRange<int64_t>(0, 3),
      fdp->ConsumeIntegral<uint32_t>());
  const check::CheckResult r =
      check::CheckRun(**layer, *w, m, x.data(), ldx, ldy, nullptr, &ops);
  if (!r.ran) Fail(r.report);
  if (checkable && !r.ok()) {
    Fail(absl::StrCat(check::Describe(desc), " format ", ToString(format),
                      " m=", m, " ldx=", ldx, " ldy=", ldy, " kernels ",
                      (*layer)->kernel_names()[0], ":\n", r.report));
  }
}

}  // namespace
}  // namespace w4jit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  w4jit::fuzz::RunOne(&fdp);
  return 0;
}
