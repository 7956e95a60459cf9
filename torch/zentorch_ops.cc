#include "torch/zentorch_ops.h"

#include <ATen/Parallel.h>

#include <string>
#include <vector>

#include "dispatch/kernel_key.h"
#include "torch/layer_cache.h"
#include "torch/run_layer.h"
#include "torch/tensor_checks.h"

namespace w4jit::torch_ext {
namespace {

constexpr const char* kRepack = "w4jit::woq_repack_weight";
constexpr const char* kWoq = "w4jit::woq_linear";
constexpr const char* kDq = "w4jit::dynamic_qlinear";

bool Present(const c10::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

// Checks shared by both linear ops: scales [G, N] with G dividing K, bias
// [N], x [..., K], everything on the CPU. Returns G.
int64_t CheckCommon(const char* op, const at::Tensor& x,
                    const at::Tensor& scales,
                    const c10::optional<at::Tensor>& bias, int64_t n, int64_t k,
                    std::initializer_list<at::ScalarType> x_types) {
  CheckCpu(op, "x", x);
  CheckDType(op, "x", x, x_types);
  TORCH_CHECK(x.dim() >= 1, op, ": x is a scalar but must be [..., K]");
  TORCH_CHECK(x.size(-1) == k, op, ": x has shape ", ShapeString(x),
              ": last dim is ", x.size(-1), " but must be K = ", k,
              " (from the packed weight)");
  CheckCpu(op, "scales", scales);
  CheckDim(op, "scales", scales, 2);
  CheckDType(op, "scales", scales, {at::kFloat, at::kBFloat16, at::kHalf});
  CheckSize(op, "scales", scales, 1, n, "N, from the packed weight");
  const int64_t groups = scales.size(0);
  TORCH_CHECK(groups >= 1 && k % groups == 0, op, ": scales has shape ",
              ShapeString(scales), ": G = ", groups,
              " groups must divide K = ", k);
  if (Present(bias)) {
    CheckCpu(op, "bias", *bias);
    CheckDim(op, "bias", *bias, 1);
    CheckDType(op, "bias", *bias, {at::kFloat, at::kBFloat16, at::kHalf});
    CheckSize(op, "bias", *bias, 0, n, "N, from the packed weight");
  }
  return groups;
}

LayerDesc BaseDesc(const at::Tensor& x, const at::Tensor& scales,
                   const c10::optional<at::Tensor>& bias, int64_t n, int64_t k,
                   int64_t groups) {
  LayerDesc d;
  d.n = n;
  d.k = k;
  d.group_size = groups == 1 ? -1 : k / groups;
  d.scale_dtype = ToDType(scales.scalar_type());
  d.act_dtype = ToDType(x.scalar_type());
  d.out_dtype = d.act_dtype;
  d.has_bias = Present(bias);
  if (d.has_bias) {
    d.bias_dtype =
        bias->scalar_type() == at::kBFloat16 ? DType::kBF16 : DType::kF32;
  }
  return d;
}

// Builds a layer from zentorch int32 words [N, K/8] (contiguous).
std::shared_ptr<const Layer> Build(const char* op, const LayerDesc& desc,
                                   const at::Tensor& words,
                                   const at::Tensor& scales,
                                   const c10::optional<at::Tensor>& zp,
                                   const c10::optional<at::Tensor>& bias) {
  const at::Tensor s = scales.contiguous();
  const at::Tensor z = Present(zp) ? zp->contiguous() : at::Tensor();
  const at::Tensor b = Present(bias) ? LayerBias(*bias) : at::Tensor();
  WeightsView v;
  v.format = WeightFormat::kZentorchInt32;
  v.qweight = words.data_ptr();
  v.scales = s.data_ptr();
  v.zero_points = z.defined() ? z.data_ptr() : nullptr;
  v.bias = b.defined() ? b.data_ptr() : nullptr;
  v.groups_major = true;
  auto layer = Layer::Create(desc, v);
  TORCH_CHECK(layer.ok(), op, ": ", std::string(layer.status().message()));
  return std::shared_ptr<const Layer>(std::move(*layer));
}

// The process-wide W4A16 numerics (W4JIT_NUMERICS, read per call so that
// a process may set it before its first layer).
Numerics ProcessNumerics(const char* op) {
  absl::StatusOr<Numerics> n = NumericsFromEnvironment();
  TORCH_CHECK(n.ok(), op, ": ", std::string(n.status().message()));
  return *n;
}

// What changes a layer besides its tensors: the op, the activation dtype
// (which fixes the output dtype), the epilogue and the numerics.
uint64_t Signature(int op, const at::Tensor& x, const Epilogue& e,
                   Numerics numerics = Numerics::kExact) {
  return (static_cast<uint64_t>(numerics) << 40) |
         (static_cast<uint64_t>(internal::EpilogueCode(e)) << 16) |
         (static_cast<uint64_t>(op) << 8) |
         static_cast<uint64_t>(x.scalar_type());
}

}  // namespace

at::Tensor WoqRepackWeight(const at::Tensor& w) {
  CheckCpu(kRepack, "unpacked_weight", w);
  CheckDim(kRepack, "unpacked_weight", w, 2);
  CheckDType(kRepack, "unpacked_weight", w, {at::kChar});
  const int64_t n = w.size(0);
  const int64_t k = w.size(1);
  TORCH_CHECK(k % 8 == 0, kRepack, ": unpacked_weight has shape ",
              ShapeString(w), ": K = ", k,
              " must be a multiple of 8 (8 nibbles per int32)");
  const at::Tensor src = w.contiguous();
  at::Tensor out = at::empty({n, k / 8}, w.options().dtype(at::kInt));
  if (src.numel() == 0) return out;
  const int8_t* in = src.data_ptr<int8_t>();
  // Range check first, so a bad value is reported with its position.
  const auto [lo, hi] = at::aminmax(src);
  const int lo_v = lo.item<int8_t>();
  const int hi_v = hi.item<int8_t>();
  if (lo_v < -8 || hi_v > 15) {
    const int bad = lo_v < -8 ? lo_v : hi_v;
    const at::Tensor where = (src == bad).nonzero()[0];
    TORCH_CHECK(false, kRepack, ": unpacked_weight[", where[0].item<int64_t>(),
                ", ", where[1].item<int64_t>(), "] = ", bad,
                " is not a 4-bit value (must be in [-8, 7] for s4 or [0, 15]"
                " for u4)");
  }
  uint32_t* words = reinterpret_cast<uint32_t*>(out.data_ptr<int32_t>());
  at::parallel_for(0, n * (k / 8), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      uint32_t word = 0;
      for (int j = 0; j < 8; ++j) {
        word |= (static_cast<uint32_t>(in[i * 8 + j]) & 0xFu) << (4 * j);
      }
      words[i] = word;
    }
  });
  return out;
}

namespace {

struct Dims {
  int64_t n;
  int64_t k;
  int64_t groups;
};

Dims CheckWoq(const at::Tensor& x, const at::Tensor& packed,
              const at::Tensor& scales,
              const c10::optional<at::Tensor>& zero_points,
              const c10::optional<at::Tensor>& bias) {
  CheckCpu(kWoq, "packed", packed);
  CheckDim(kWoq, "packed", packed, 2);
  CheckDType(kWoq, "packed", packed, {at::kInt});
  const int64_t n = packed.size(1);
  const int64_t k = packed.size(0) * 8;
  TORCH_CHECK(n > 0 && k > 0, kWoq, ": packed has shape ", ShapeString(packed),
              " but must be a non-empty [K/8, N]");
  const int64_t groups =
      CheckCommon(kWoq, x, scales, bias, n, k, {at::kFloat, at::kBFloat16});
  if (Present(zero_points)) {
    const at::Tensor& zp = *zero_points;
    CheckCpu(kWoq, "zero_points", zp);
    CheckDim(kWoq, "zero_points", zp, 2);
    // int8: integer zero points (u - z) * s; bf16 / f32: float ones,
    // (u - 8) * s + z (torchao's int4 weight-only form).
    CheckDType(kWoq, "zero_points", zp, {at::kChar, at::kBFloat16, at::kFloat});
    CheckSize(kWoq, "zero_points", zp, 0, groups, "G, from scales");
    CheckSize(kWoq, "zero_points", zp, 1, n, "N, from the packed weight");
  }
  return {n, k, groups};
}

std::shared_ptr<const Layer> CachedWoq(
    const Dims& dims, const at::Tensor& x, const at::Tensor& packed,
    const at::Tensor& scales, const c10::optional<at::Tensor>& zero_points,
    const c10::optional<at::Tensor>& bias, const Epilogue& e = {}) {
  const Numerics numerics = ProcessNumerics(kWoq);
  return LayerCache::Global().GetOrBuild(
      Signature(0, x, e, numerics), {packed, scales, zero_points, bias}, [&] {
        LayerDesc d = BaseDesc(x, scales, bias, dims.n, dims.k, dims.groups);
        d.mode = Mode::kW4A16;
        d.numerics = numerics;
        d.epilogue = e;
        d.weight_type =
            Present(zero_points) ? WeightType::kU4 : WeightType::kS4;
        if (Present(zero_points) && zero_points->scalar_type() != at::kChar) {
          d.zero_point_domain = ZeroPointDomain::kFloat;
          d.zero_point_dtype = ToDType(zero_points->scalar_type());
        }
        // packed[kb, n] is word (n, kb) of the repacked [N, K/8] tensor,
        // whatever its strides: the seed's t() view is already contiguous
        // this way round, so this copies nothing for it.
        return Build(kWoq, d, packed.t().contiguous(), scales, zero_points,
                     bias);
      });
}

Dims CheckDq(const at::Tensor& x, const at::Tensor& packed,
             const at::Tensor& scales, const c10::optional<at::Tensor>& bias) {
  CheckCpu(kDq, "packed", packed);
  CheckDim(kDq, "packed", packed, 2);
  CheckDType(kDq, "packed", packed, {at::kChar, at::kInt});
  const int64_t per_element = packed.scalar_type() == at::kChar ? 2 : 8;
  const int64_t n = packed.size(0);
  const int64_t k = packed.size(1) * per_element;
  TORCH_CHECK(n > 0 && k > 0, kDq, ": packed has shape ", ShapeString(packed),
              " but must be a non-empty int8 [N, K/2] or int32 [N, K/8]");
  TORCH_CHECK(k % 8 == 0, kDq, ": packed has shape ", ShapeString(packed),
              ": K = ", k, " must be a multiple of 8");
  const int64_t groups =
      CheckCommon(kDq, x, scales, bias, n, k, {at::kBFloat16, at::kFloat});
  return {n, k, groups};
}

std::shared_ptr<const Layer> CachedDq(
    const Dims& dims, const at::Tensor& x, const at::Tensor& packed,
    const at::Tensor& scales, const c10::optional<at::Tensor>& bias,
    ActQuant act_quant = ActQuant::kPerToken) {
  // Op 1: per-token DA8W4, op 2: per-group (a distinct layer).
  const int op = act_quant == ActQuant::kPerGroup ? 2 : 1;
  return LayerCache::Global().GetOrBuild(
      Signature(op, x, Epilogue{}), {packed, scales, c10::nullopt, bias}, [&] {
        LayerDesc d = BaseDesc(x, scales, bias, dims.n, dims.k, dims.groups);
        d.mode = Mode::kDA8W4;
        d.weight_type = WeightType::kS4;
        d.act_quant = act_quant;
        return Build(kDq, d, packed.contiguous(), scales, c10::nullopt, bias);
      });
}

// The ops pass their non_finite keyword per call: one cached layer serves
// both policies.
LayerRunOptions RunOptions(NonFinitePolicy non_finite) {
  LayerRunOptions o;
  o.non_finite = non_finite;
  return o;
}

// [..., N] with no rows: an empty batch needs no layer.
at::Tensor EmptyResult(const at::Tensor& x, int64_t n) {
  std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
  sizes.back() = n;
  return at::empty(sizes, x.options());
}

}  // namespace

std::shared_ptr<const Layer> WoqLinearLayer(
    const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
    const c10::optional<at::Tensor>& zero_points,
    const c10::optional<at::Tensor>& bias) {
  return CachedWoq(CheckWoq(x, packed, scales, zero_points, bias), x, packed,
                   scales, zero_points, bias);
}

std::shared_ptr<const Layer> DynamicQLinearLayer(
    const at::Tensor& x, const at::Tensor& packed, const at::Tensor& scales,
    const c10::optional<at::Tensor>& bias) {
  return CachedDq(CheckDq(x, packed, scales, bias), x, packed, scales, bias);
}

at::Tensor WoqLinear(const at::Tensor& x, const at::Tensor& packed,
                     const at::Tensor& scales,
                     const c10::optional<at::Tensor>& zero_points,
                     const c10::optional<at::Tensor>& bias,
                     NonFinitePolicy non_finite) {
  const Dims dims = CheckWoq(x, packed, scales, zero_points, bias);
  if (x.numel() == 0) return EmptyResult(x, dims.n);
  return RunLayer(kWoq, *CachedWoq(dims, x, packed, scales, zero_points, bias),
                  x, {}, nullptr, RunOptions(non_finite));
}

at::Tensor DynamicQLinear(const at::Tensor& x, const at::Tensor& packed,
                          const at::Tensor& scales,
                          const c10::optional<at::Tensor>& bias,
                          const at::Tensor* out, ActQuant act_quant,
                          NonFinitePolicy non_finite) {
  const Dims dims = CheckDq(x, packed, scales, bias);
  if (x.numel() == 0 && out == nullptr) return EmptyResult(x, dims.n);
  return RunLayer(kDq, *CachedDq(dims, x, packed, scales, bias, act_quant), x,
                  {}, out, RunOptions(non_finite));
}

at::Tensor WoqLinearEpilogue(const char* op, const at::Tensor& x,
                             const at::Tensor& packed, const at::Tensor& scales,
                             const c10::optional<at::Tensor>& zero_points,
                             const c10::optional<at::Tensor>& bias, Epilogue e,
                             c10::ArrayRef<at::Tensor> operands,
                             const at::Tensor* out,
                             NonFinitePolicy non_finite) {
  const Dims dims = CheckWoq(x, packed, scales, zero_points, bias);
  TORCH_CHECK(!e.silu_mul || dims.n % 2 == 0, op,
              ": the merged [gate | up] weight has N = ", dims.n,
              " columns, which must be even");
  for (size_t i = 0; i < operands.size(); ++i) {
    const char* name = i == 0 ? "binary operand 0" : "binary operand 1";
    CheckCpu(op, name, operands[i]);
    CheckDType(op, name, operands[i], {at::kFloat, at::kBFloat16});
    e.binary[i].dtype = ToDType(operands[i].scalar_type());
  }
  if (x.numel() == 0 && out == nullptr) {
    return EmptyResult(x, e.silu_mul ? dims.n / 2 : dims.n);
  }
  return RunLayer(op, *CachedWoq(dims, x, packed, scales, zero_points, bias, e),
                  x, operands, out, RunOptions(non_finite));
}

}  // namespace w4jit::torch_ext
