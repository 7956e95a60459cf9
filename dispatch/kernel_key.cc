#include "dispatch/kernel_key.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace w4jit::internal {
namespace {

const char* FamilyName(KernelFamily f) {
  switch (f) {
    case KernelFamily::kQuantizer:
      return "quant";
    case KernelFamily::kDa8w4Gemm:
      return "da8w4";
    case KernelFamily::kW4a16Gemm:
      return "w4a16";
    case KernelFamily::kW4a16Dequant:
      return "w4a16dq";
    case KernelFamily::kW4a16Panel:
      return "w4a16panel";
  }
  return "unknown";
}

const char* IsaSuffix(IsaTier t) {
  switch (t) {
    case IsaTier::kRef:
      return "ref";
    case IsaTier::kAvx2:
      return "avx2";
    case IsaTier::kAvx512Vnni:
      return "avx512vnni";
    case IsaTier::kAvx512Bf16:
      return "avx512bf16";
  }
  return "unknown";
}

const char* DtypeShort(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  return "x";
}

}  // namespace

std::string KernelKey::name() const {
  std::string s = absl::StrCat(FamilyName(family), "_",
                               weight_type == WeightType::kS4 ? "s4" : "u4");
  if (per_channel) {
    absl::StrAppend(&s, "_pc");
  } else {
    absl::StrAppend(&s, "_g", group_size);
  }
  absl::StrAppend(&s, "_n", n, "_k", k, "_m", mr, "x", nr);
  absl::StrAppend(&s, "_", DtypeShort(act_dtype), "to", DtypeShort(out_dtype));
  if (flavor == Flavor::kF32Fma) absl::StrAppend(&s, "_fma");
  if (flavor == Flavor::kBf16Dot) absl::StrAppend(&s, "_bf16dot");
  if (bias) absl::StrAppend(&s, "_bias");
  if (flags != 0) absl::StrAppend(&s, absl::StrFormat("_f%x", flags));
  absl::StrAppend(&s, "__", IsaSuffix(isa));
  return s;
}

}  // namespace w4jit::internal
