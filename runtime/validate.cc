#include "runtime/validate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "absl/strings/str_format.h"
#include "runtime/non_finite.h"

namespace w4jit::internal {
namespace {

bool IsKnown(DType t) {
  return t == DType::kF32 || t == DType::kBF16 || t == DType::kF16;
}

// "f16", or "7 (not a dtype)" for an out-of-range enum value.
std::string DtypeName(DType t) {
  return IsKnown(t) ? ToString(t)
                    : absl::StrFormat("%d (not a dtype)", static_cast<int>(t));
}

// Upper bound on N and K: keeps N*K and every byte offset well inside
// int64 and the int32 sums of the integer kernels exact.
constexpr int64_t kMaxDim = int64_t{1} << 24;

}  // namespace

absl::Status ValidateDesc(const LayerDesc& d) {
  if (d.n <= 0 || d.n > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("N = %d must be in [1, %d]", d.n, kMaxDim));
  }
  if (d.k <= 0 || d.k > kMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("K = %d must be in [1, %d]", d.k, kMaxDim));
  }
  if (d.group_size != -1) {
    if (d.group_size <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group_size = %d must be positive or -1 (per-channel)",
          d.group_size));
    }
    if (d.k % d.group_size != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group_size = %d does not divide K = %d", d.group_size, d.k));
    }
  }
  if (d.weight_type != WeightType::kS4 && d.weight_type != WeightType::kU4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("weight_type = %d is not s4 (0) or u4 (1)",
                        static_cast<int>(d.weight_type)));
  }
  if (d.mode != Mode::kW4A16 && d.mode != Mode::kDA8W4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "mode = %d is not W4A16 (0) or DA8W4 (1)", static_cast<int>(d.mode)));
  }
  if (d.act_quant != ActQuant::kPerToken &&
      d.act_quant != ActQuant::kPerGroup) {
    return absl::InvalidArgumentError(
        absl::StrFormat("act_quant = %d is not per_token (0) or per_group (1)",
                        static_cast<int>(d.act_quant)));
  }
  if (d.act_quant == ActQuant::kPerGroup && d.mode != Mode::kDA8W4) {
    return absl::InvalidArgumentError(
        "act_quant = per_group quantizes DA8W4 activations; this layer's mode "
        "is w4a16 (its activations are not quantized)");
  }
  if (d.numerics != Numerics::kExact && d.numerics != Numerics::kZentorch) {
    return absl::InvalidArgumentError(
        absl::StrFormat("numerics = %d is not exact (0) or zentorch (1)",
                        static_cast<int>(d.numerics)));
  }
  if (absl::Status s = ValidateNonFinitePolicy("non_finite", d.non_finite);
      !s.ok()) {
    return s;
  }
  if (d.numerics == Numerics::kZentorch && d.mode != Mode::kW4A16) {
    return absl::InvalidArgumentError(
        "numerics = zentorch rounds W4A16's dequantized weights to bf16; this "
        "layer's mode is da8w4 (its int8 x int4 products are exact, as "
        "zentorch's are)");
  }
  if (!IsKnown(d.scale_dtype)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("scale_dtype = %d is not f32, bf16 or f16",
                        static_cast<int>(d.scale_dtype)));
  }
  if (d.act_dtype != DType::kBF16 && d.act_dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrFormat("act_dtype = %s is not supported (bf16 or f32)",
                        DtypeName(d.act_dtype)));
  }
  if (d.out_dtype != DType::kBF16 && d.out_dtype != DType::kF32) {
    return absl::InvalidArgumentError(
        absl::StrFormat("out_dtype = %s is not supported (bf16 or f32)",
                        DtypeName(d.out_dtype)));
  }
  if (d.has_bias && d.bias_dtype != DType::kF32 &&
      d.bias_dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bias_dtype = %s is not supported (f32 or bf16)",
                        DtypeName(d.bias_dtype)));
  }
  if (absl::Status s = ValidateZeroPointDomain(d); !s.ok()) return s;
  return ValidateEpilogue(d);
}

absl::Status ValidateZeroPointDomain(const LayerDesc& d) {
  if (d.zero_point_domain == ZeroPointDomain::kInteger) {
    return absl::OkStatus();
  }
  if (d.zero_point_domain != ZeroPointDomain::kFloat) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "zero_point_domain = %d is not integer (0) or float (1)",
        static_cast<int>(d.zero_point_domain)));
  }
  if (d.weight_type != WeightType::kU4) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "zero_point_domain = float needs weight_type u4 (values in [0, 15] "
        "with a zero point per group), not %s",
        ToString(d.weight_type)));
  }
  if (d.mode == Mode::kDA8W4) {
    return absl::InvalidArgumentError(
        "zero_point_domain = float is not supported in DA8W4 mode (DA8W4 "
        "weights are symmetric s4 only); use W4A16");
  }
  if (d.zero_point_dtype != DType::kBF16 && d.zero_point_dtype != DType::kF32) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "zero_point_dtype = %s is not supported for float zero points (bf16 "
        "or f32)",
        DtypeName(d.zero_point_dtype)));
  }
  return absl::OkStatus();
}

absl::Status ValidateEpilogue(const LayerDesc& d) {
  const Epilogue& e = d.epilogue;
  const int act = static_cast<int>(e.activation);
  if (act < static_cast<int>(Activation::kNone) ||
      act > static_cast<int>(Activation::kSwigluOai)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "epilogue.activation = %d is not an activation (none 0, relu 1, "
        "sigmoid 2, gelu_tanh 3, gelu_erf 4, silu 5, swigluoai 6)",
        act));
  }
  if (e.activation == Activation::kSwigluOai && !e.silu_mul) {
    return absl::InvalidArgumentError(
        "epilogue.activation = swigluoai gates a [gate | up] pair: it needs "
        "epilogue.silu_mul");
  }
  if (e.num_binary < 0 || e.num_binary > 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "epilogue.num_binary = %d must be 0, 1 or 2", e.num_binary));
  }
  for (int i = 0; i < e.num_binary; ++i) {
    const BinaryPostOp& b = e.binary[i];
    if (b.op != BinaryOp::kMul && b.op != BinaryOp::kAdd) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "epilogue.binary[%d].op = %d is not mul (0) or add (1)", i,
          static_cast<int>(b.op)));
    }
    if (b.dtype != DType::kF32 && b.dtype != DType::kBF16) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "epilogue.binary[%d].dtype = %s is not supported (bf16 or f32)", i,
          DtypeName(b.dtype)));
    }
  }
  if (e.silu_mul) {
    if (e.activation != Activation::kNone &&
        e.activation != Activation::kSilu &&
        e.activation != Activation::kGeluTanh &&
        e.activation != Activation::kGeluErf &&
        e.activation != Activation::kSwigluOai) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "epilogue.silu_mul gates with silu, gelu_tanh, gelu_erf or "
          "swigluoai; activation = %s is none of them",
          ToString(e.activation)));
    }
    if (e.activation == Activation::kSwigluOai &&
        !(std::isfinite(e.gate_alpha) && std::isfinite(e.gate_limit) &&
          e.gate_limit > 0.0f)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "swigluoai needs a finite gate_alpha and a finite gate_limit > 0; "
          "gate_alpha = %g, gate_limit = %g",
          e.gate_alpha, e.gate_limit));
    }
    if (d.n % 2 != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "epilogue.silu_mul needs an even N ([gate | up] halves), N = %d",
          d.n));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateWeightsPointers(const LayerDesc& d, const WeightsView& v) {
  if (v.qweight == nullptr) {
    return absl::InvalidArgumentError("weights.qweight is null");
  }
  if (v.scales == nullptr) {
    return absl::InvalidArgumentError("weights.scales is null");
  }
  if (d.weight_type == WeightType::kU4 && v.zero_points == nullptr) {
    return absl::InvalidArgumentError(
        "weights.zero_points is null but weight_type is u4 (asymmetric "
        "weights need zero points)");
  }
  if (d.weight_type == WeightType::kS4 && v.zero_points != nullptr) {
    return absl::InvalidArgumentError(
        "weights.zero_points is given but weight_type is s4 (symmetric "
        "weights have no zero points; use u4)");
  }
  if (v.scale_groups != 0 && v.scale_groups != d.groups()) {
    if (v.scale_groups < d.groups()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weights.scale_groups = %d must be 0 (the layer's own) or at least "
          "K / group_size = %d (K = %d, group_size = %d)",
          v.scale_groups, d.groups(), d.k, d.group_size));
    }
    if (v.g_idx == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weights.scale_groups = %d is more than K / group_size = %d: a "
          "K-shard of an act-order checkpoint, which needs g_idx (the "
          "checkpoint group of each of the shard's K = %d channels)",
          v.scale_groups, d.groups(), d.k));
    }
  }
  if (d.has_bias && v.bias == nullptr) {
    return absl::InvalidArgumentError(
        "weights.bias is null but has_bias is true");
  }
  if (!d.has_bias && v.bias != nullptr) {
    return absl::InvalidArgumentError(
        "weights.bias is given but has_bias is false");
  }
  return absl::OkStatus();
}

absl::Status ValidateRunArgs(const LayerDesc& d, int64_t m, const void* x,
                             int64_t ldx, const void* y, int64_t ldy) {
  if (m < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("M = %d must not be negative", m));
  }
  // M = 0 (an empty batch) reads and writes nothing, so null x and y are
  // fine then, as in BLAS; the strides are still checked.
  if (m > 0 && x == nullptr) return absl::InvalidArgumentError("x is null");
  if (m > 0 && y == nullptr) return absl::InvalidArgumentError("y is null");
  if (ldx < d.k) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ldx = %d is smaller than K = %d", ldx, d.k));
  }
  if (ldy < d.out_n()) {
    return absl::InvalidArgumentError(
        d.epilogue.silu_mul
            ? absl::StrFormat("ldy = %d is smaller than N / 2 = %d (silu_mul)",
                              ldy, d.out_n())
            : absl::StrFormat("ldy = %d is smaller than N = %d", ldy, d.n));
  }
  // Keep every element offset representable.
  const int64_t max_ld =
      std::numeric_limits<int64_t>::max() / 4 / std::max<int64_t>(m, 1);
  if (ldx > max_ld || ldy > max_ld) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "M = %d with ldx = %d / ldy = %d overflows the address range", m, ldx,
        ldy));
  }
  return absl::OkStatus();
}

absl::Status ValidateEpilogueInputs(const LayerDesc& d, int64_t m,
                                    const EpilogueInputs& in) {
  const int nb = d.epilogue.num_binary;
  const int64_t n_out = d.out_n();
  for (int i = 0; i < 2; ++i) {
    if (i >= nb) {
      if (in.data[i] != nullptr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "epilogue operand %d is given but the layer's epilogue has %d "
            "binary post-op(s)",
            i, nb));
      }
      continue;
    }
    if (m > 0 && in.data[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("epilogue operand %d (%s) is null", i,
                          ToString(d.epilogue.binary[i].op)));
    }
    if (in.ld[i] < n_out) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "epilogue operand %d: ld = %d is smaller than the output width %d", i,
          in.ld[i], n_out));
    }
    const int64_t max_ld =
        std::numeric_limits<int64_t>::max() / 4 / std::max<int64_t>(m, 1);
    if (in.ld[i] > max_ld) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "epilogue operand %d: M = %d with ld = %d overflows the address "
          "range",
          i, m, in.ld[i]));
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::internal
