#include "torch/int4pack_ops.h"

#include <torch/version.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "dispatch/cpuid_features.h"
#include "runtime/formats/tinygemm_int4pack.h"
#include "torch/tensor_checks.h"
#include "torch/zentorch_ops.h"

// torch 2.1 and later say which capability their CPU kernels run at
// (at::get_cpu_capability(), torch.backends.cpu.get_cpu_capability()).
#if TORCH_VERSION_MAJOR > 2 || \
    (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#include <ATen/Version.h>
#define W4JIT_TORCH_HAS_CPU_CAPABILITY 1
#else
#define W4JIT_TORCH_HAS_CPU_CAPABILITY 0
#endif

namespace w4jit::torch_ext {
namespace {

constexpr const char* kOp = "w4jit::woq_repack_from_int4pack";

#if !W4JIT_TORCH_HAS_CPU_CAPABILITY
// torch's own rule (aten/src/ATen/native/DispatchStub.cpp,
// compute_cpu_capability), for a torch that cannot be asked: the
// ATEN_CPU_CAPABILITY override, else AVX512 where the CPU has AVX-512
// VL/BW/DQ and FMA, AVX2 where it has AVX2 and FMA, else DEFAULT. Such a
// torch (1.13) has no int4pack packer itself; the rule says what a newer
// torch on this machine would have written. Unlike torch, which warns and
// ignores it, an unknown override is an error here (it names the value).
std::string CapabilityOfThisMachine() {
  if (const char* env = std::getenv("ATEN_CPU_CAPABILITY"); env != nullptr) {
    return env;
  }
  // w4jit's own CPUID read (dispatch/cpuid_features.h: a feature only
  // where the OS saves its registers), not a second detection.
  const internal::CpuFeatures f =
      internal::FeaturesFromCpuid(internal::HostCpuidWords());
  if (f.avx512vl && f.avx512bw && f.avx512dq && f.fma) return "AVX512";
  if (f.avx2 && f.fma) return "AVX2";
  return "DEFAULT";
}
#endif

}  // namespace

std::string TorchCpuCapability() {
#if W4JIT_TORCH_HAS_CPU_CAPABILITY
  return at::get_cpu_capability();
#else
  return CapabilityOfThisMachine();
#endif
}

at::Tensor WoqRepackFromInt4Pack(const at::Tensor& packed_weight) {
  const at::Tensor& p = packed_weight;
  CheckCpu(kOp, "packed_weight", p);
  CheckDim(kOp, "packed_weight", p, 2);
  CheckDType(kOp, "packed_weight", p, {at::kByte});
  const int64_t n = p.size(0);
  const int64_t k = p.size(1) * 2;
  const absl::Status shape = internal::CheckInt4PackShape(n, k);
  TORCH_CHECK(shape.ok(), kOp, ": packed_weight has shape ", ShapeString(p),
              " but must be uint8 [N, K/2] with N a multiple of 16 and K > 0 "
              "(torch's CPU int4pack): ",
              std::string(shape.message()));
  const std::string capability = TorchCpuCapability();
  const absl::StatusOr<internal::Int4PackBlocking> blocking =
      internal::Int4PackBlockingFor(capability);
  TORCH_CHECK(blocking.ok(), kOp, ": ",
              std::string(blocking.status().message()));
  const at::Tensor src = p.contiguous();
  at::Tensor u = at::empty({n, k}, p.options().dtype(at::kChar));
  internal::UnpackTinygemmInt4Pack(src.data_ptr<uint8_t>(), n, k, *blocking,
                                   reinterpret_cast<uint8_t*>(u.data_ptr()));
  return WoqRepackWeight(u);
}

void RegisterInt4PackOps(torch::Library& m) {
  // zentorch's schema exactly (w4jit.zentorch_contract): no op-name
  // argument, as for woq_repack_weight.
  m.def(
      "woq_repack_from_int4pack(Tensor packed_weight) -> Tensor",
      torch::dispatch(c10::DispatchKey::CPU, TORCH_FN(WoqRepackFromInt4Pack)));
  // The capability torch packs int4pack weights for here, as the op reads
  // it (tests; torch.backends.cpu.get_cpu_capability() where torch has it).
  m.def("_int4pack_capability() -> str", TORCH_FN(TorchCpuCapability));
}

}  // namespace w4jit::torch_ext
