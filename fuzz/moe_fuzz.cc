#include "fuzz/moe_fuzz.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "check/layer_check.h"
#include "check/moe_check.h"
#include "fuzz/fuzz_util.h"
#include "runtime/formats/import.h"
#include "runtime/moe/moe_experts.h"
#include "w4jit/moe.hpp"

namespace w4jit::fuzz {
namespace {

constexpr DType kDtypes[] = {DType::kF32, DType::kBF16, DType::kF16};
constexpr int64_t kGroups[] = {-1, 4, 8, 16, 32, 3, 12};
// Inputs below this keep both projections far from f32 overflow (x and
// scales 2^8, 16-level weights, K <= 2^9: the intermediate stays below
// 2^58 and y below 2^80), so the layer and the oracle must agree.
constexpr double kSafeMagnitude = 256.0;

MoeDesc ConsumeDesc(FuzzedDataProvider* fdp, WeightFormat format) {
  MoeDesc d;
  d.mode = fdp->ConsumeBool() ? Mode::kDA8W4 : Mode::kW4A16;
  d.weight_type = fdp->ConsumeBool() ? WeightType::kU4 : WeightType::kS4;
  d.scale_dtype = fdp->PickValueInArray(kDtypes);
  d.act_dtype = fdp->ConsumeBool() ? DType::kF32 : DType::kBF16;
  d.out_dtype = fdp->ConsumeBool() ? DType::kF32 : DType::kBF16;
  d.has_w13_bias = fdp->ConsumeBool();
  d.has_w2_bias = fdp->ConsumeBool();
  d.bias_dtype = fdp->ConsumeBool() ? DType::kF32 : DType::kBF16;
  // Any activation, for the validation; mostly the three gates.
  d.activation = static_cast<Activation>(fdp->ConsumeIntegralInRange(0, 7));
  if (fdp->ConsumeIntegralInRange(0, 3) != 3) {
    constexpr Activation kGates[] = {Activation::kSilu, Activation::kGeluErf,
                                     Activation::kGeluTanh,
                                     Activation::kSwigluOai};
    d.activation = fdp->PickValueInArray(kGates);
  }
  if (fdp->ConsumeBool()) {
    // swigluoai's constants: mostly usable ones, sometimes anything (a
    // zero, negative or non-finite limit must be refused).
    d.swiglu_alpha = fdp->ConsumeFloatingPointInRange(-8.0f, 8.0f);
    d.swiglu_limit = fdp->ConsumeIntegralInRange(0, 9) == 9
                         ? fdp->ConsumeFloatingPoint<float>()
                         : fdp->ConsumeFloatingPointInRange(0.25f, 16.0f);
  }
  if (d.mode == Mode::kDA8W4 && fdp->ConsumeBool()) {
    d.act_quant = ActQuant::kPerGroup;
  }
  d.experts = fdp->ConsumeIntegralInRange<int64_t>(1, 4);
  if (fdp->ConsumeIntegralInRange(0, 9) == 9) {
    // Anything, for the validation.
    d.experts = fdp->ConsumeIntegralInRange<int64_t>(-1, 4);
    d.hidden = fdp->ConsumeIntegralInRange<int64_t>(-2, 72);
    d.intermediate = fdp->ConsumeIntegralInRange<int64_t>(-2, 72);
    d.group_size = fdp->ConsumeIntegralInRange<int64_t>(-3, 72);
    return d;
  }
  d.group_size = fdp->PickValueInArray(kGroups);
  const int64_t unit = d.group_size == -1 ? 1 : d.group_size;
  d.hidden = unit * fdp->ConsumeIntegralInRange<int64_t>(1, 8);
  d.intermediate = unit * fdp->ConsumeIntegralInRange<int64_t>(1, 8);
  if (fdp->ConsumeIntegralInRange(0, 4) != 4 &&
      format != WeightFormat::kUnpackedInt8) {
    // Mostly shapes the format can hold: H and I multiples of 8 (every
    // other format packs K, or N, by eights).
    const int64_t step = d.group_size == -1 ? 8 : std::lcm(unit, int64_t{8});
    d.hidden = (d.hidden + step - 1) / step * step;
    d.intermediate = (d.intermediate + step - 1) / step * step;
  }
  return d;
}

template <class T>
void Append(std::vector<T>* to, const std::vector<T>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// The experts' tensors back to back (expert e's at e * expert 0's size);
// g_idx only if every expert has one.
FuzzedCheckpoint Stack(const std::vector<FuzzedCheckpoint>& cs,
                       ExpertStrides* st) {
  FuzzedCheckpoint s;
  bool g_idx = true;
  for (const FuzzedCheckpoint& c : cs) {
    g_idx = g_idx && !c.g_idx.empty() && c.g_idx.size() == cs[0].g_idx.size();
  }
  for (const FuzzedCheckpoint& c : cs) {
    Append(&s.qweight, c.qweight);
    Append(&s.scales, c.scales);
    Append(&s.zeros, c.zeros);
    Append(&s.bias, c.bias);
    if (g_idx) Append(&s.g_idx, c.g_idx);
  }
  st->qweight = static_cast<int64_t>(cs[0].qweight.size());
  st->scales = static_cast<int64_t>(cs[0].scales.size());
  st->zero_points = static_cast<int64_t>(cs[0].zeros.size());
  st->bias = static_cast<int64_t>(cs[0].bias.size());
  st->g_idx = g_idx ? static_cast<int64_t>(cs[0].g_idx.size()) : 0;
  return s;
}

// Rewrites a buffer of dtype `t` elements as moderate values (each from
// one of its bytes, in [-bound, bound)), so that a share of the inputs is
// checkable against the oracle.
void Tame(std::vector<uint8_t>* bytes, DType t, double bound) {
  const size_t n = bytes->size() / internal::DTypeSize(t);
  for (size_t i = 0; i < n; ++i) {
    const int b = (*bytes)[i * internal::DTypeSize(t)];
    internal::StoreFromF32(bytes->data(), t, static_cast<int64_t>(i),
                           static_cast<float>((b - 128) / 128.0 * bound));
  }
}

bool Finite(const std::vector<float>& v, double bound) {
  for (float f : v) {
    if (!(std::fabs(f) < bound)) return false;
  }
  return true;
}

}  // namespace

void RunMoeOne(FuzzedDataProvider* fdp) {
  // Every format but tinygemm (which needs float zero points).
  const WeightFormat format = fdp->PickValueInArray(check::kAllFormats);
  const bool groups_major = fdp->ConsumeBool();
  const bool stacked = fdp->ConsumeBool();
  const MoeDesc desc = ConsumeDesc(fdp, format);
  const LayerDesc d13 = internal::MoeW13Desc(desc);
  const LayerDesc d2 = internal::MoeW2Desc(desc);
  const int64_t experts = std::max<int64_t>(desc.experts, 0);

  // Every expert's tensors; stacked: one buffer per tensor (expert e at
  // e * its size), else each expert's own.
  std::vector<FuzzedCheckpoint> c13, c2;
  MoeWeights weights;
  const bool tame = fdp->ConsumeBool();
  for (int64_t e = 0; e < experts; ++e) {
    c13.push_back(MakeCheckpoint(fdp, d13, format));
    c2.push_back(MakeCheckpoint(fdp, d2, format));
    for (FuzzedCheckpoint* c : {&c13.back(), &c2.back()}) {
      if (!tame) continue;
      Tame(&c->scales, desc.scale_dtype, 0.05);
      Tame(&c->bias, desc.bias_dtype, 1.0);
    }
  }
  auto view = [&](const FuzzedCheckpoint& c, bool bias) {
    WeightsView v = c.view(format, groups_major);
    if (desc.weight_type == WeightType::kS4) v.zero_points = nullptr;
    if (!bias) v.bias = nullptr;
    return v;
  };
  FuzzedCheckpoint s13, s2;
  if (stacked && experts > 0) {
    ExpertStrides st13, st2;
    s13 = Stack(c13, &st13);
    s2 = Stack(c2, &st2);
    weights.w13 = StackedExperts(view(s13, desc.has_w13_bias), st13, experts);
    weights.w2 = StackedExperts(view(s2, desc.has_w2_bias), st2, experts);
  } else {
    for (int64_t e = 0; e < experts; ++e) {
      weights.w13.push_back(view(c13[e], desc.has_w13_bias));
      weights.w2.push_back(view(c2[e], desc.has_w2_bias));
    }
  }
  absl::StatusOr<std::unique_ptr<MoeLayer>> layer =
      MoeLayer::Create(desc, weights);
  if (!layer.ok()) {
    if (layer.status().message().empty()) Fail("an error without a message");
    return;
  }
  // What the layer imported must import on its own too: the oracle's
  // weights.
  check::MoeCheckpoint oracle;
  bool safe = true;
  for (int64_t e = 0; e < experts; ++e) {
    auto w13 = internal::ImportWeights(d13, weights.w13[e]);
    auto w2 = internal::ImportWeights(d2, weights.w2[e]);
    if (!w13.ok() || !w2.ok()) {
      Fail(absl::StrCat(
          "MoeLayer::Create accepted expert ", e,
          " but ImportWeights refuses it: ", w13.status().ToString(), " / ",
          w2.status().ToString()));
    }
    for (const internal::CanonicalWeights* w : {&*w13, &*w2}) {
      safe = safe && Finite(w->scales, kSafeMagnitude) &&
             Finite(w->bias, kSafeMagnitude);
    }
    oracle.w13.push_back(*std::move(w13));
    oracle.w2.push_back(*std::move(w2));
  }
  // Routing: mostly valid ids, some out of range; k = 0 or k > E now and
  // then; weights mostly moderate, some NaN / Inf. (The rare choices are
  // the largest values: a short input reads as zeros, the common ones.)
  const int64_t t = fdp->ConsumeIntegralInRange<int64_t>(1, 8);
  int64_t k = fdp->ConsumeIntegralInRange<int64_t>(1, experts);
  if (fdp->ConsumeIntegralInRange(0, 15) == 15) {
    k = fdp->ConsumeBool() ? 0 : experts + 1;
  }
  const bool unweighted = fdp->ConsumeIntegralInRange(0, 4) == 4;
  std::vector<int32_t> ids(static_cast<size_t>(t * std::max<int64_t>(k, 1)));
  std::vector<float> route(ids.size());
  bool routing_ok = k >= 1 && k <= experts;
  for (size_t s = 0; s < ids.size(); ++s) {
    ids[s] = fdp->ConsumeIntegralInRange(0, 31) == 31
                 ? fdp->ConsumeIntegral<int32_t>()
                 : fdp->ConsumeIntegralInRange<int32_t>(
                       0, static_cast<int32_t>(experts - 1));
    routing_ok = routing_ok && ids[s] >= 0 && ids[s] < experts;
    route[s] = fdp->ConsumeIntegralInRange(0, 31) == 31
                   ? fdp->PickValueInArray({NAN, INFINITY, -INFINITY})
                   : fdp->ConsumeFloatingPointInRange<float>(-2.0f, 2.0f);
    routing_ok = routing_ok && (unweighted || std::isfinite(route[s]));
  }

  // x: the fuzzer's bytes as raw f32/bf16 (NaN, Inf, denormals included);
  // y: a pattern that must survive a refused call, and its padding any.
  const int64_t ldx = desc.hidden + fdp->ConsumeIntegralInRange<int64_t>(0, 3);
  const int64_t ldy = desc.hidden + fdp->ConsumeIntegralInRange<int64_t>(0, 3);
  const size_t xs = internal::DTypeSize(desc.act_dtype);
  std::vector<uint8_t> x =
      fdp->ConsumeBytes<uint8_t>(static_cast<size_t>(t * ldx) * xs);
  x.resize(static_cast<size_t>(t * ldx) * xs, 0x3f);
  if (tame) Tame(&x, desc.act_dtype, 4.0);
  const size_t ys = internal::DTypeSize(desc.out_dtype);
  std::vector<uint8_t> y(static_cast<size_t>(t * ldy) * ys, 0x3c);
  const std::vector<uint8_t> y_before = y;
  const absl::Status s = (*layer)->Run(
      t, x.data(), ldx, ids.data(), unweighted ? nullptr : route.data(), k,
      y.data(), ldy, MoeRunOptions{false, unweighted});
  if (!routing_ok) {
    if (s.ok()) Fail("MoeLayer::Run accepted bad routing");
    if (y != y_before)
      Fail(absl::StrCat("a refused call wrote y: ", s.ToString()));
    return;
  }
  if (!s.ok()) {
    Fail(absl::StrCat("MoeLayer::Run refused a good call: ", s.ToString()));
  }
  for (int64_t i = 0; i < t; ++i) {
    const size_t pad = static_cast<size_t>(i * ldy + desc.hidden) * ys;
    if (std::memcmp(y.data() + pad, y_before.data() + pad,
                    static_cast<size_t>(ldy - desc.hidden) * ys) != 0) {
      Fail(absl::StrCat("MoeLayer::Run wrote the padding of y row ", i));
    }
  }
  for (int64_t i = 0; i < t; ++i) {
    safe = safe && MaxAbs(x.data() + i * ldx * xs, desc.act_dtype,
                          desc.hidden) < kSafeMagnitude;
  }
  if (!safe) return;
  const check::MoeExpected want = check::MoeOracle(
      desc, oracle, t, x.data(), ldx, ids.data(),
      unweighted ? nullptr : route.data(), k, nullptr, ldy, false);
  const std::string bad = check::CompareMoe(desc, want, t, y.data(), ldy);
  if (!bad.empty()) {
    Fail(absl::StrCat("MoE E=", desc.experts, " H=", desc.hidden,
                      " I=", desc.intermediate, " group=", desc.group_size, " ",
                      ToString(desc.mode), " ", ToString(format), " t=", t,
                      " k=", k, ": ", bad));
  }
}

}  // namespace w4jit::fuzz
