// TORCH_LIBRARY(w4jit, ...): the zentorch-compatible ops, the custom class,
// and a few underscore-prefixed helpers for tests and the benchmark.
//
// Loading this library also makes ATen's intra-op pool w4jit's threading
// backend (see aten_parallel_backend.h).
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "torch/arg_names.h"
#include "torch/aten_parallel_backend.h"
#include "torch/content_fingerprint.h"
#include "torch/epilogue_ops.h"
#include "torch/int4pack_ops.h"
#include "torch/layer_cache.h"
#include "torch/linear_class.h"
#include "torch/moe_class.h"
#include "torch/moe_ops.h"
#include "torch/tensor_checks.h"
#include "torch/weight_check.h"
#include "torch/zentorch_ops.h"
#include "w4jit/parallel.hpp"

namespace w4jit::torch_ext {
namespace {

// The schemas are zentorch's (python/w4jit/zentorch_contract.py holds them
// and tests/python/test_contract.py compares): the linear ops end in a
// keyword-only `zentorch_op_name` string, accepted so calls written for
// them bind unchanged, and ignored. non_finite (w4jit's own keyword):
// "propagate" (default, NaN / Inf in a row of x gives a non-finite row of
// the result) or "error" (NonFinitePolicy).
at::Tensor WoqLinearOp(const at::Tensor& x, const at::Tensor& packed,
                       const at::Tensor& scales,
                       const c10::optional<at::Tensor>& zero_points,
                       const c10::optional<at::Tensor>& bias,
                       c10::string_view non_finite,
                       c10::string_view /*op_name*/) {
  return WoqLinear(x, packed, scales, zero_points, bias,
                   ParseNonFinite("w4jit::woq_linear", non_finite));
}

// act_quant (w4jit's own keyword): "per_token" (zentorch's) or "per_group".
// is_weight_prepacked (zentorch's keyword) must be false.
at::Tensor DynamicQLinearOp(const at::Tensor& x, const at::Tensor& packed,
                            const at::Tensor& scales,
                            const c10::optional<at::Tensor>& bias,
                            bool is_weight_prepacked,
                            c10::string_view act_quant,
                            c10::string_view non_finite,
                            c10::string_view /*op_name*/) {
  constexpr const char* kOp = "w4jit::dynamic_qlinear";
  CheckNotPrepacked(kOp, is_weight_prepacked);
  return DynamicQLinear(x, packed, scales, bias, nullptr,
                        ParseActQuant(kOp, act_quant),
                        ParseNonFinite(kOp, non_finite));
}

int64_t CacheSize() {
  return static_cast<int64_t>(LayerCache::Global().Sweep() +
                              MoeCache::Global().Sweep());
}

void ClearCache() {
  LayerCache::Global().Clear();
  MoeCache::Global().Clear();
}

// zentorch_flush_moe_weight_cache's counterpart: drops the fused_moe layers
// built from weight tensors (MoeCache), so that the next call repacks.
// zentorch's hosts call it between cases whose expert weights change in
// place; a host that edits inference tensors in place must too, unless
// W4JIT_WEIGHT_CHECK=content (layer_cache.h).
void FlushMoeWeightCache() { MoeCache::Global().Clear(); }

// Every op's layers (the linear ops' and fused_moe's): what a host calls
// after writing weights in place that the weight check cannot see.
void FlushWeightCache() {
  LayerCache::Global().Clear();
  MoeCache::Global().Clear();
}

// Sets W4JIT_WEIGHT_CHECK's setting for the process ("identity",
// "sampled", "content"); "" leaves it. Returns the setting in force.
std::string WeightCheckOp(c10::string_view name) {
  if (!name.empty()) {
    absl::StatusOr<WeightCheck> check =
        ParseWeightCheck(absl::string_view(name.data(), name.size()));
    TORCH_CHECK(check.ok(),
                "w4jit::weight_check: ", std::string(check.status().message()));
    SetWeightCheck(*check);
  }
  return WeightCheckName(CurrentWeightCheck());
}

// [content fingerprints, their bytes, sampled fingerprints, their bytes].
std::vector<int64_t> FingerprintCountsOp() {
  const FingerprintCounts c = FingerprintsComputed();
  return {static_cast<int64_t>(c.content_calls),
          static_cast<int64_t>(c.content_bytes),
          static_cast<int64_t>(c.sampled_calls),
          static_cast<int64_t>(c.sampled_bytes)};
}

// The chunk count w4jit would use now; with inside_parallel_region, as seen
// from inside an ATen parallel region (nested calls must not fan out).
int64_t Concurrency(bool inside_parallel_region) {
  if (!inside_parallel_region) return GetNumThreads();
  std::atomic<int> seen{0};
  at::parallel_for(0, 2, 1,
                   [&](int64_t, int64_t) { seen.store(GetNumThreads()); });
  return seen.load();
}

double NowNs() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// Per-call overhead of an op over Layer::Run on the same layer: `iters`
// alternating pairs of (Layer::Run into a preallocated y, the op called
// through the dispatcher as a C++ or TorchScript caller would). Returns
// float64 [2, iters] nanoseconds: row 0 Layer::Run, row 1 the op.
at::Tensor OverheadProbe(c10::string_view op, const at::Tensor& x,
                         const at::Tensor& packed, const at::Tensor& scales,
                         const c10::optional<at::Tensor>& zero_points,
                         const c10::optional<at::Tensor>& bias, int64_t iters) {
  const bool woq = op == "woq_linear";
  TORCH_CHECK(woq || op == "dynamic_qlinear", "w4jit::_overhead_probe: op '",
              std::string(op), "' is not woq_linear or dynamic_qlinear");
  TORCH_CHECK(iters > 0, "w4jit::_overhead_probe: iters = ", iters,
              " must be > 0");
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && x.size(0) > 0,
              "w4jit::_overhead_probe: x must be a contiguous [M, K], M > 0");
  const auto layer = woq ? WoqLinearLayer(x, packed, scales, zero_points, bias)
                         : DynamicQLinearLayer(x, packed, scales, bias);
  const LayerDesc& d = layer->desc();
  at::Tensor y =
      at::empty({x.size(0), d.n}, x.options().dtype(ToScalarType(d.out_dtype)));
  static auto woq_op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("w4jit::woq_linear", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const c10::optional<at::Tensor>&,
                            const c10::optional<at::Tensor>&, c10::string_view,
                            c10::string_view)>();
  static auto dq_op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("w4jit::dynamic_qlinear", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                            const at::Tensor&, const c10::optional<at::Tensor>&,
                            bool, c10::string_view, c10::string_view,
                            c10::string_view)>();
  at::Tensor out = at::empty({2, iters}, at::kDouble);
  double* t = out.data_ptr<double>();
  for (int64_t i = 0; i < iters; ++i) {
    double t0 = NowNs();
    absl::Status s =
        layer->Run(x.size(0), x.data_ptr(), d.k, y.data_ptr(), d.n);
    double t1 = NowNs();
    TORCH_CHECK(s.ok(), "w4jit::_overhead_probe: ", std::string(s.message()));
    at::Tensor r =
        woq ? woq_op.call(x, packed, scales, zero_points, bias, "propagate", "")
            : dq_op.call(x, packed, scales, bias, false, "per_token",
                         "propagate", "");
    double t2 = NowNs();
    t[i] = t1 - t0;
    t[iters + i] = t2 - t1;
  }
  return out;
}

}  // namespace

// The kernels of ops with tensor arguments are CPU kernels, not catch-alls:
// torch takes a catch-all for CompositeImplicitAutograd, which torch.compile
// traces into (calling the kernel on fake tensors) and which refuses a fake
// kernel (python/w4jit/_fake.py registers one per op). The helpers without
// tensor arguments have nothing to dispatch on and stay catch-alls.
TORCH_LIBRARY(w4jit, m) {
  InstallAtenParallelBackend();
  m.def("woq_repack_weight(Tensor unpacked_weight) -> Tensor",
        torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(WoqRepackWeight)));
  m.def(
      "woq_linear(Tensor input, Tensor weight, Tensor weight_scales, "
      "Tensor? weight_zero_points, Tensor? bias=None, *, "
      "str non_finite=\"propagate\", "
      "str zentorch_op_name=\"w4jit::woq_linear\") -> Tensor",
      torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(WoqLinearOp)));
  m.def(
      "dynamic_qlinear(Tensor input, Tensor weight, Tensor weight_scales, "
      "Tensor? bias=None, *, bool is_weight_prepacked=False, "
      "str act_quant=\"per_token\", str non_finite=\"propagate\", "
      "str zentorch_op_name=\"w4jit::dynamic_qlinear\") -> Tensor",
      torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(DynamicQLinearOp)));
  m.def("_cache_size() -> int", TORCH_FN(CacheSize));
  m.def("_clear_cache() -> ()", TORCH_FN(ClearCache));
  m.def("flush_moe_weight_cache() -> ()", TORCH_FN(FlushMoeWeightCache));
  m.def("flush_weight_cache() -> ()", TORCH_FN(FlushWeightCache));
  m.def("weight_check(str name=\"\") -> str", TORCH_FN(WeightCheckOp));
  m.def("_fingerprint_counts() -> int[]", TORCH_FN(FingerprintCountsOp));
  m.def("_concurrency(bool inside_parallel_region=False) -> int",
        TORCH_FN(Concurrency));
  m.def(
      "_overhead_probe(str op, Tensor x, Tensor packed, Tensor scales, "
      "Tensor? zero_points, Tensor? bias, int iters) -> Tensor",
      torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(OverheadProbe)));
  RegisterEpilogueOps(m);
  RegisterInt4PackOps(m);
  RegisterLinearClass(m);
  RegisterMoeOps(m);
  RegisterMoeClass(m);
}

}  // namespace w4jit::torch_ext
