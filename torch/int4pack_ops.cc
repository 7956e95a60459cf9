#include "torch/int4pack_ops.h"

#include <string>

#include "runtime/formats/tinygemm_int4pack.h"
#include "torch/tensor_checks.h"
#include "torch/zentorch_ops.h"

namespace w4jit::torch_ext {
namespace {

constexpr const char* kOp = "w4jit::woq_repack_from_int4pack";

}  // namespace

at::Tensor WoqRepackFromInt4Pack(const at::Tensor& packed_weight) {
  const at::Tensor& p = packed_weight;
  CheckCpu(kOp, "packed_weight", p);
  CheckDim(kOp, "packed_weight", p, 2);
  CheckDType(kOp, "packed_weight", p, {at::kByte});
  const int64_t n = p.size(0);
  const int64_t k = p.size(1) * 2;
  TORCH_CHECK(n > 0 && k > 0 && n % 64 == 0, kOp, ": packed_weight has shape ",
              ShapeString(p),
              " but must be uint8 [N, K/2] with N a multiple of 64 (torch's "
              "CPU int4pack layout, 64-row blocks), N = ",
              n);
  const at::Tensor src = p.contiguous();
  at::Tensor u = at::empty({n, k}, p.options().dtype(at::kChar));
  internal::UnpackTinygemmInt4Pack(src.data_ptr<uint8_t>(), n, k,
                                   reinterpret_cast<uint8_t*>(u.data_ptr()));
  return WoqRepackWeight(u);
}

void RegisterInt4PackOps(torch::Library& m) {
  // zentorch's schema exactly (w4jit.zentorch_contract): no op-name
  // argument, as for woq_repack_weight.
  m.def(
      "woq_repack_from_int4pack(Tensor packed_weight) -> Tensor",
      torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(WoqRepackFromInt4Pack)));
}

}  // namespace w4jit::torch_ext
