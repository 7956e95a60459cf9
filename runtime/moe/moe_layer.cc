// MoeLayer: the public object, its validation, and stacked-expert views.
#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/memory.h"
#include "base/numeric.h"
#include "runtime/moe/moe_experts.h"
#include "runtime/moe/routing.h"
#include "runtime/non_finite.h"
#include "runtime/validate.h"
#include "w4jit/moe.hpp"

namespace w4jit {
namespace {

absl::Status Prefixed(const char* what, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

absl::Status ValidateMoeDesc(const MoeDesc& d) {
  if (d.experts < 1 || d.hidden < 1 || d.intermediate < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "experts = %d, hidden = %d and intermediate = %d must all be >= 1",
        d.experts, d.hidden, d.intermediate));
  }
  if (d.experts > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "experts = %d does not fit the int32 expert ids", d.experts));
  }
  if (d.activation != Activation::kSilu &&
      d.activation != Activation::kGeluTanh &&
      d.activation != Activation::kGeluErf &&
      d.activation != Activation::kSwigluOai) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "activation = %s is not silu, gelu_tanh, gelu_erf or swigluoai",
        ToString(d.activation)));
  }
  if (d.activation == Activation::kSwigluOai &&
      !(std::isfinite(d.swiglu_alpha) && std::isfinite(d.swiglu_limit) &&
        d.swiglu_limit > 0.0f)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "swigluoai needs a finite swiglu_alpha and a finite swiglu_limit > 0; "
        "swiglu_alpha = %g, swiglu_limit = %g",
        d.swiglu_alpha, d.swiglu_limit));
  }
  if (absl::Status s =
          internal::ValidateNonFinitePolicy("non_finite", d.non_finite);
      !s.ok()) {
    return s;
  }
  if (d.out_dtype != DType::kF32 && d.out_dtype != DType::kBF16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("out_dtype = %s is not supported (bf16 or f32)",
                        ToString(d.out_dtype)));
  }
  if (absl::Status s = internal::ValidateDesc(internal::MoeW13Desc(d));
      !s.ok()) {
    return Prefixed("w13 (N = 2 * intermediate, K = hidden)", s);
  }
  return Prefixed("w2 (N = hidden, K = intermediate)",
                  internal::ValidateDesc(internal::MoeW2Desc(d)));
}

absl::Status ValidateMoeWeights(const MoeDesc& d, const MoeWeights& w) {
  if (static_cast<int64_t>(w.w13.size()) != d.experts ||
      static_cast<int64_t>(w.w2.size()) != d.experts) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d w13 and %d w2 expert views given for experts = %d",
                        w.w13.size(), w.w2.size(), d.experts));
  }
  const LayerDesc d13 = internal::MoeW13Desc(d);
  const LayerDesc d2 = internal::MoeW2Desc(d);
  for (int64_t e = 0; e < d.experts; ++e) {
    if (absl::Status s = internal::ValidateWeightsPointers(d13, w.w13[e]);
        !s.ok()) {
      return Prefixed(absl::StrCat("expert ", e, " w13").c_str(), s);
    }
    if (absl::Status s = internal::ValidateWeightsPointers(d2, w.w2[e]);
        !s.ok()) {
      return Prefixed(absl::StrCat("expert ", e, " w2").c_str(), s);
    }
  }
  return absl::OkStatus();
}

// NonFinitePolicy::kError: the first bad id or weight (ValidateRouting),
// then the first non-finite element of x, as an error.
absl::Status CheckRunInput(const MoeDesc& d, int64_t t, const void* x,
                           int64_t ldx, const int32_t* ids,
                           const float* weights, int64_t k) {
  if (absl::Status s = internal::ValidateRouting(t, k, d.experts, ids, weights);
      !s.ok()) {
    return s;
  }
  return internal::CheckFinite(d.act_dtype, t, x, ldx, d.hidden);
}

// NonFinitePolicy::kPropagate: the tokens with a bad id, a non-finite
// weight or a non-finite x row (1), which MoeExperts::Run skips.
std::vector<uint8_t> TokensToSkip(const MoeDesc& d, int64_t t, const void* x,
                                  int64_t ldx, const int32_t* ids,
                                  const float* weights, int64_t k) {
  std::vector<uint8_t> skip;
  internal::MarkBadRouting(t, k, d.experts, ids, weights, &skip);
  const size_t row_bytes =
      static_cast<size_t>(ldx) * internal::DTypeSize(d.act_dtype);
  for (int64_t i = 0; i < t; ++i) {
    const void* row = static_cast<const char*>(x) + i * row_bytes;
    if (skip[i] == 0 && !internal::RowIsFinite(d.act_dtype, row, d.hidden)) {
      skip[i] = 1;
    }
  }
  return skip;
}

const void* Offset(const void* p, int64_t bytes) {
  return p == nullptr ? nullptr : static_cast<const char*>(p) + bytes;
}

}  // namespace

std::vector<WeightsView> StackedExperts(const WeightsView& first,
                                        const ExpertStrides& strides,
                                        int64_t experts) {
  std::vector<WeightsView> out;
  for (int64_t e = 0; e < experts; ++e) {
    WeightsView v = first;
    v.qweight = Offset(first.qweight, e * strides.qweight);
    v.scales = Offset(first.scales, e * strides.scales);
    v.zero_points = Offset(first.zero_points, e * strides.zero_points);
    v.bias = Offset(first.bias, e * strides.bias);
    if (first.g_idx != nullptr) v.g_idx = first.g_idx + e * strides.g_idx;
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::unique_ptr<MoeLayer>> MoeLayer::Create(
    const MoeDesc& desc, const MoeWeights& weights, const MoeOptions& options) {
  if (absl::Status s = ValidateMoeDesc(desc); !s.ok()) return s;
  if (absl::Status s = ValidateMoeWeights(desc, weights); !s.ok()) return s;
  try {
    auto experts =
        internal::MoeExperts::Create(desc, weights, options.force_reference);
    if (!experts.ok()) return experts.status();
    return std::unique_ptr<MoeLayer>(new MoeLayer(desc, *std::move(experts)));
  } catch (const internal::AllocationError& e) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate %d bytes for the packed experts (experts = %d, "
        "hidden = %d, intermediate = %d)",
        e.bytes(), desc.experts, desc.hidden, desc.intermediate));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "out of memory importing the experts (experts = %d, hidden = %d, "
        "intermediate = %d)",
        desc.experts, desc.hidden, desc.intermediate));
  }
}

MoeLayer::MoeLayer(const MoeDesc& desc, std::unique_ptr<internal::MoeExperts> e)
    : desc_(desc), experts_(std::move(e)) {}

MoeLayer::~MoeLayer() = default;

absl::Status MoeLayer::Run(int64_t t, const void* x, int64_t ldx,
                           const int32_t* topk_ids, const float* topk_weights,
                           int64_t k, void* y, int64_t ldy,
                           const MoeRunOptions& options) const {
  if (t < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("T = %d tokens must not be negative", t));
  }
  const NonFinitePolicy policy = options.non_finite.value_or(desc_.non_finite);
  if (absl::Status s = internal::ValidateNonFinitePolicy(
          "MoeRunOptions::non_finite", policy);
      !s.ok()) {
    return s;
  }
  if (k < 1 || k > desc_.experts) {
    return absl::InvalidArgumentError(
        absl::StrFormat("k = %d experts per token is not in [1, experts = %d]",
                        k, desc_.experts));
  }
  if (ldx < desc_.hidden || ldy < desc_.hidden) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ldx = %d and ldy = %d must be >= hidden = %d", ldx,
                        ldy, desc_.hidden));
  }
  if (ldx > std::numeric_limits<int64_t>::max() / 4 / std::max<int64_t>(t, 1) ||
      ldy > std::numeric_limits<int64_t>::max() / 4 / std::max<int64_t>(t, 1) ||
      t > std::numeric_limits<int64_t>::max() / 4 / k / desc_.hidden) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "T = %d with ldx = %d / ldy = %d overflows the address range", t, ldx,
        ldy));
  }
  if (t == 0) return absl::OkStatus();
  if (x == nullptr) return absl::InvalidArgumentError("x is null");
  if (y == nullptr) return absl::InvalidArgumentError("y is null");
  if (topk_ids == nullptr) {
    return absl::InvalidArgumentError("topk_ids is null");
  }
  if (topk_weights == nullptr && !options.unweighted) {
    return absl::InvalidArgumentError(
        "topk_weights is null (allowed only with MoeRunOptions::unweighted)");
  }
  const float* weights = options.unweighted ? nullptr : topk_weights;
  std::vector<uint8_t> skip;
  if (policy == NonFinitePolicy::kError) {
    if (absl::Status s = CheckRunInput(desc_, t, x, ldx, topk_ids, weights, k);
        !s.ok()) {
      return s;
    }
  } else {
    skip = TokensToSkip(desc_, t, x, ldx, topk_ids, weights, k);
  }
  try {
    experts_->Run(t, x, ldx, topk_ids, topk_weights, k, y, ldy, options,
                  skip.empty() ? nullptr : skip.data());
  } catch (const internal::AllocationError& e) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot allocate %d bytes of scratch for T = %d, k = %d", e.bytes(), t,
        k));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("out of memory running T = %d, k = %d", t, k));
  }
  return absl::OkStatus();
}

size_t MoeLayer::packed_bytes() const { return experts_->packed_bytes(); }

size_t MoeLayer::expert_packed_bytes() const {
  return experts_->expert_packed_bytes();
}

std::vector<std::string> MoeLayer::kernel_names() const {
  return experts_->kernel_names();
}

LayerCompute MoeLayer::compute_at(int64_t rows) const {
  return experts_->compute_at(std::max<int64_t>(rows, 1));
}

}  // namespace w4jit
