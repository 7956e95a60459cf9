#include "fuzz/moe_fuzz.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
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
  d.non_finite = fdp->ConsumeBool() ? NonFinitePolicy::kPropagate
                                    : NonFinitePolicy::kError;
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

// One call's arguments: routing (mostly valid ids, some out of range; k = 0
// or k > E now and then; weights mostly moderate, some NaN / Inf), x (the
// fuzzer's bytes as raw f32/bf16, NaN, Inf and denormals included, or
// moderate values) and the policy for bad input (the desc's, or one per
// call). Bad input is also planted token by token (CallPlan): a bad id, a
// non-finite weight, NaN / Inf at some column of x.
struct MoeCall {
  int64_t t = 0, k = 0, ldx = 0, ldy = 0;
  bool unweighted = false;
  std::vector<int32_t> ids;
  std::vector<float> route;
  std::vector<uint8_t> x;
  std::optional<NonFinitePolicy> policy;
};

constexpr float kNonFinite[] = {NAN, INFINITY, -INFINITY};

// What a call is drawn around, drawn first of all (ConsumePlan) while the
// input lasts (the checkpoints use most of it up): the token count, the
// call's policy (none: the desc's), and which tokens get bad input: token
// i if bit i % 8 of `bad` is set, its kind (id, weight, x) and place from
// `where`.
struct CallPlan {
  int64_t t = 1;
  std::optional<NonFinitePolicy> policy;
  uint8_t bad = 0, where = 0;
};

CallPlan ConsumePlan(FuzzedDataProvider* fdp) {
  CallPlan p;
  p.t = fdp->ConsumeIntegralInRange<int64_t>(1, 8);
  const int choice = fdp->ConsumeIntegralInRange(0, 3);
  if (choice <= 1) {
    p.policy =
        choice == 0 ? NonFinitePolicy::kPropagate : NonFinitePolicy::kError;
  }
  p.bad = fdp->ConsumeIntegral<uint8_t>();
  p.where = fdp->ConsumeIntegral<uint8_t>();
  return p;
}

void PlantBadInput(const MoeDesc& desc, const CallPlan& p, MoeCall* c) {
  const int32_t kBadIds[] = {-1, static_cast<int32_t>(desc.experts),
                             static_cast<int32_t>(desc.experts) + 7,
                             std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max()};
  for (int64_t i = 0; i < c->t && c->k >= 1; ++i) {
    if (((p.bad >> (i % 8)) & 1) == 0) continue;
    const int64_t w = p.where + i;
    const int64_t slot = i * c->k + w % c->k;
    switch (w % 3) {
      case 0:
        c->ids[slot] = kBadIds[w % 5];
        break;
      case 1:
        c->route[slot] = kNonFinite[w % 3];
        break;
      default: {
        // Now and then in the padding past H, where it must not count.
        const int64_t col = (w * 7) % c->ldx;
        internal::StoreFromF32(c->x.data(), desc.act_dtype, i * c->ldx + col,
                               kNonFinite[(w / 3) % 3]);
      }
    }
  }
}

MoeCall ConsumeCall(FuzzedDataProvider* fdp, const MoeDesc& desc, bool tame,
                    const CallPlan& plan) {
  // The rare choices are the largest values: a short input reads as
  // zeros, the common ones.
  const int64_t experts = std::max<int64_t>(desc.experts, 0);
  MoeCall c;
  c.t = plan.t;
  c.k = fdp->ConsumeIntegralInRange<int64_t>(1, experts);
  if (fdp->ConsumeIntegralInRange(0, 15) == 15) {
    c.k = fdp->ConsumeBool() ? 0 : experts + 1;
  }
  c.unweighted = fdp->ConsumeIntegralInRange(0, 4) == 4;
  c.policy = plan.policy;
  c.ids.resize(static_cast<size_t>(c.t * std::max<int64_t>(c.k, 1)));
  c.route.resize(c.ids.size());
  for (size_t s = 0; s < c.ids.size(); ++s) {
    c.ids[s] = fdp->ConsumeIntegralInRange(0, 31) == 31
                   ? fdp->ConsumeIntegral<int32_t>()
                   : fdp->ConsumeIntegralInRange<int32_t>(
                         0, static_cast<int32_t>(experts - 1));
    c.route[s] = fdp->ConsumeIntegralInRange(0, 31) == 31
                     ? fdp->PickValueInArray(kNonFinite)
                     : fdp->ConsumeFloatingPointInRange<float>(-2.0f, 2.0f);
  }
  c.ldx = desc.hidden + fdp->ConsumeIntegralInRange<int64_t>(0, 3);
  c.ldy = desc.hidden + fdp->ConsumeIntegralInRange<int64_t>(0, 3);
  const size_t xs = internal::DTypeSize(desc.act_dtype);
  c.x = fdp->ConsumeBytes<uint8_t>(static_cast<size_t>(c.t * c.ldx) * xs);
  c.x.resize(static_cast<size_t>(c.t * c.ldx) * xs, 0x3f);
  if (tame) Tame(&c.x, desc.act_dtype, 4.0);
  PlantBadInput(desc, plan, &c);
  return c;
}

// Token i's input is bad (NonFinitePolicy): an id outside [0, E), a
// non-finite routing weight (unless unweighted) or NaN / Inf in x[i, 0..H).
std::vector<bool> BadTokens(const MoeDesc& desc, const MoeCall& c) {
  std::vector<bool> bad(static_cast<size_t>(c.t), false);
  const size_t xs = internal::DTypeSize(desc.act_dtype);
  for (int64_t i = 0; i < c.t; ++i) {
    for (int64_t j = 0; j < c.k; ++j) {
      const size_t s = static_cast<size_t>(i * c.k + j);
      bad[i] = bad[i] || c.ids[s] < 0 || c.ids[s] >= desc.experts ||
               (!c.unweighted && !std::isfinite(c.route[s]));
    }
    bad[i] = bad[i] || !std::isfinite(MaxAbs(c.x.data() + i * c.ldx * xs,
                                             desc.act_dtype, desc.hidden));
  }
  return bad;
}

// The tokens of `c` that `keep` marks, as a call of their own.
MoeCall Subset(const MoeDesc& desc, const MoeCall& c,
               const std::vector<bool>& keep) {
  MoeCall s = c;
  s.t = 0;
  s.ids.clear();
  s.route.clear();
  s.x.clear();
  const size_t row =
      static_cast<size_t>(c.ldx) * internal::DTypeSize(desc.act_dtype);
  for (int64_t i = 0; i < c.t; ++i) {
    if (!keep[i]) continue;
    ++s.t;
    s.ids.insert(s.ids.end(), c.ids.begin() + i * c.k,
                 c.ids.begin() + (i + 1) * c.k);
    s.route.insert(s.route.end(), c.route.begin() + i * c.k,
                   c.route.begin() + (i + 1) * c.k);
    s.x.insert(s.x.end(), c.x.begin() + i * row, c.x.begin() + (i + 1) * row);
  }
  return s;
}

// Runs `c` on `layer` into y between guard bytes and checks: kError (the
// call's or the desc's) refuses any bad input with y and the guards
// untouched; kPropagate runs whenever k is valid, every bad token's row is
// all NaN, the others are the oracle's (where inputs are moderate), and
// nothing outside y[i, 0..H) is written; k outside [1, E] is an error
// under both.
void CheckCall(const MoeLayer& layer, const MoeDesc& desc,
               const check::MoeCheckpoint& oracle, bool safe,
               const MoeCall& c) {
  constexpr size_t kGuard = 64;
  const size_t ys = internal::DTypeSize(desc.out_dtype);
  const size_t y_bytes = static_cast<size_t>(c.t * c.ldy) * ys;
  std::vector<uint8_t> buffer(kGuard + y_bytes + kGuard, 0x3c);
  const std::vector<uint8_t> before = buffer;
  uint8_t* y = buffer.data() + kGuard;
  MoeRunOptions options;
  options.unweighted = c.unweighted;
  options.non_finite = c.policy;
  const absl::Status s = layer.Run(c.t, c.x.data(), c.ldx, c.ids.data(),
                                   c.unweighted ? nullptr : c.route.data(), c.k,
                                   y, c.ldy, options);
  const bool k_ok = c.k >= 1 && c.k <= desc.experts;
  const std::vector<bool> bad = BadTokens(desc, c);
  bool any_bad = false;
  for (bool b : bad) any_bad = any_bad || b;
  const bool propagate =
      c.policy.value_or(desc.non_finite) == NonFinitePolicy::kPropagate;
  if (!k_ok || (any_bad && !propagate)) {
    if (s.ok()) Fail("MoeLayer::Run accepted bad input under kError");
    if (buffer != before) {
      Fail(absl::StrCat("a refused call wrote y: ", s.ToString()));
    }
    return;
  }
  if (!s.ok()) {
    Fail(absl::StrCat("MoeLayer::Run refused a call: ", s.ToString()));
  }
  if (std::memcmp(buffer.data(), before.data(), kGuard) != 0 ||
      std::memcmp(y + y_bytes, before.data(), kGuard) != 0) {
    Fail("MoeLayer::Run wrote outside y");
  }
  std::vector<bool> good(bad.size());
  std::vector<uint8_t> y_good;
  for (int64_t i = 0; i < c.t; ++i) {
    const uint8_t* row = y + static_cast<size_t>(i * c.ldy) * ys;
    if (std::memcmp(row + desc.hidden * ys, before.data(),
                    static_cast<size_t>(c.ldy - desc.hidden) * ys) != 0) {
      Fail(absl::StrCat("MoeLayer::Run wrote the padding of y row ", i));
    }
    good[i] = !bad[i];
    if (good[i]) {
      y_good.insert(y_good.end(), row, row + c.ldy * ys);
      continue;
    }
    for (int64_t q = 0; q < desc.hidden; ++q) {
      if (!std::isnan(internal::LoadAsF32(row, desc.out_dtype, q))) {
        Fail(absl::StrCat("kPropagate: bad token ", i, " has y[", i, ", ", q,
                          "] = ", internal::LoadAsF32(row, desc.out_dtype, q),
                          ", not NaN"));
      }
    }
  }
  const MoeCall g = Subset(desc, c, good);
  const size_t xs = internal::DTypeSize(desc.act_dtype);
  for (int64_t i = 0; i < g.t; ++i) {
    safe = safe && MaxAbs(g.x.data() + i * g.ldx * xs, desc.act_dtype,
                          desc.hidden) < kSafeMagnitude;
  }
  if (!safe || g.t == 0) return;
  const check::MoeExpected want = check::MoeOracle(
      desc, oracle, g.t, g.x.data(), g.ldx, g.ids.data(),
      g.unweighted ? nullptr : g.route.data(), g.k, nullptr, g.ldy, false);
  const std::string wrong =
      check::CompareMoe(desc, want, g.t, y_good.data(), g.ldy);
  if (!wrong.empty()) {
    Fail(absl::StrCat("MoE E=", desc.experts, " H=", desc.hidden,
                      " I=", desc.intermediate, " group=", desc.group_size, " ",
                      ToString(desc.mode), " t=", c.t, " (", g.t,
                      " good) k=", c.k, ": ", wrong));
  }
}

}  // namespace

void RunMoeOne(FuzzedDataProvider* fdp) {
  // Every format but tinygemm (which needs float zero points).
  const WeightFormat format = fdp->PickValueInArray(check::kAllFormats);
  const bool groups_major = fdp->ConsumeBool();
  const bool stacked = fdp->ConsumeBool();
  const CallPlan plan = ConsumePlan(fdp);
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
  CheckCall(**layer, desc, oracle, safe, ConsumeCall(fdp, desc, tame, plan));
}

}  // namespace w4jit::fuzz
