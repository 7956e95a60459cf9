#include "check/moe_selftest.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/numeric.h"
#include "check/case_fields.h"
#include "check/draw_util.h"
#include "check/layer_check.h"
#include "check/moe_check.h"
#include "dispatch/cpu_profile.h"
#include "runtime/moe/moe_experts.h"

namespace w4jit::check {
namespace {

constexpr const char* kMoePrefix = "moe=1,";
constexpr int64_t kMacBudget = int64_t{1} << 20;  // T * k * H * I per case

const char* GateName(Activation a) {
  return a == Activation::kGeluErf     ? "gelu"
         : a == Activation::kGeluTanh  ? "gelu_tanh"
         : a == Activation::kSwigluOai ? "swigluoai"
                                       : "silu";
}

// Token i's k expert ids from `seed`: distinct (a shuffle of the experts'
// first k), drawn with repetition, and with expert 0 first in every token
// when skewed.
std::vector<int32_t> Routing(const MoeCase& c, std::mt19937_64* rng) {
  const int64_t e = c.desc.experts;
  std::vector<int32_t> ids(static_cast<size_t>(c.t * c.k));
  std::vector<int32_t> all(static_cast<size_t>(e));
  std::iota(all.begin(), all.end(), 0);
  for (int64_t i = 0; i < c.t; ++i) {
    std::shuffle(all.begin() + (c.skewed ? 1 : 0), all.end(), *rng);
    for (int64_t j = 0; j < c.k; ++j) {
      ids[i * c.k + j] =
          c.repeats ? static_cast<int32_t>(Uniform(rng, 0, e - 1)) : all[j];
    }
    if (c.skewed) ids[i * c.k] = 0;
  }
  return ids;
}

// The largest |y - oracle| / tolerance over the valid outputs.
double WorstRatio(const MoeDesc& d, const MoeExpected& want, int64_t t,
                  const void* y, int64_t ldy) {
  double worst = 0.0;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t c = 0; c < d.hidden; ++c) {
      const double got = internal::LoadAsF32(y, d.out_dtype, i * ldy + c);
      const size_t at = static_cast<size_t>(i * d.hidden + c);
      const double r = std::fabs(got - want.value[at]) / want.tol[at];
      worst = std::max(worst, std::isnan(r) ? HUGE_VAL : r);
    }
  }
  return worst;
}

}  // namespace

bool IsMoeCaseText(const std::string& text) {
  return text.rfind(kMoePrefix, 0) == 0;
}

std::string MoeCaseToString(const MoeCase& c) {
  const MoeDesc& d = c.desc;
  std::string s = absl::StrFormat(
      "%sisa=%s,mode=%s,act_quant=%s,experts=%d,hidden=%d,inter=%d,group=%d,"
      "weights=%s,format=%s,stacked=%d,scales=%s,act=%s,out=%s,gate=%s,"
      "w13_bias=%d,w2_bias=%d,bias=%s,bf16_compute=%d,t=%d,k=%d,skewed=%d,"
      "repeats=%d,accumulate=%d,unweighted=%d,ldx=%d,ldy=%d,threads=%d,"
      "backend=%s,wseed=%u,xseed=%u",
      kMoePrefix, internal::ToString(c.isa), ToString(d.mode),
      ToString(d.act_quant), d.experts, d.hidden, d.intermediate, d.group_size,
      ToString(d.weight_type), ToString(c.format), c.stacked ? 1 : 0,
      ToString(d.scale_dtype), ToString(d.act_dtype), ToString(d.out_dtype),
      GateName(d.activation), d.has_w13_bias ? 1 : 0, d.has_w2_bias ? 1 : 0,
      ToString(d.bias_dtype), d.allow_bf16_compute ? 1 : 0, c.t, c.k,
      c.skewed ? 1 : 0, c.repeats ? 1 : 0, c.accumulate ? 1 : 0,
      c.unweighted ? 1 : 0, c.ldx, c.ldy, c.threads, c.backend, c.weight_seed,
      c.x_seed);
  if (d.activation == Activation::kSwigluOai) {
    absl::StrAppendFormat(&s, ",alpha=%.9g,limit=%.9g", d.swiglu_alpha,
                          d.swiglu_limit);
  }
  return s;
}

absl::StatusOr<MoeCase> ParseMoeCase(const std::string& text) {
  if (!IsMoeCaseText(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a MoE case starts with '", kMoePrefix, "'"));
  }
  MoeCase c;
  MoeDesc& d = c.desc;
  absl::StatusOr<std::map<std::string, std::string>> fields =
      CaseFields(text.substr(std::strlen(kMoePrefix)));
  if (!fields.ok()) return fields.status();
  const CommonFields common{
      &c.isa,         &d.mode,        &d.act_quant,
      &d.weight_type, &c.format,      &d.scale_dtype,
      &d.act_dtype,   &d.out_dtype,   &d.allow_bf16_compute,
      &c.ldx,         &c.ldy,         &c.threads,
      &c.backend,     &c.weight_seed, &c.x_seed};
  for (const auto& [name, value] : *fields) {
    const FieldParse shared = ParseCommonField(name, value, common);
    if (shared == FieldParse::kBad) return BadCaseField(name, value);
    if (shared == FieldParse::kOk) continue;
    int64_t num = 0;
    const bool is_num = absl::SimpleAtoi(value, &num);
    bool ok = true;
    if (name == "bias") {
      ok = ParseEnum(value, {DType::kF32, DType::kBF16}, &d.bias_dtype);
    } else if (name == "gate") {
      ok = false;
      for (Activation a : {Activation::kSilu, Activation::kGeluErf,
                           Activation::kGeluTanh, Activation::kSwigluOai}) {
        if (value == GateName(a)) {
          d.activation = a;
          ok = true;
        }
      }
    } else if (name == "alpha" || name == "limit") {
      float f = 0.0f;
      ok = absl::SimpleAtof(value, &f);
      (name == "alpha" ? d.swiglu_alpha : d.swiglu_limit) = f;
    } else if (!is_num) {
      ok = false;
    } else if (name == "experts") {
      d.experts = num;
    } else if (name == "hidden") {
      d.hidden = num;
    } else if (name == "inter") {
      d.intermediate = num;
    } else if (name == "group") {
      d.group_size = num;
    } else if (name == "stacked") {
      c.stacked = num != 0;
    } else if (name == "w13_bias") {
      d.has_w13_bias = num != 0;
    } else if (name == "w2_bias") {
      d.has_w2_bias = num != 0;
    } else if (name == "t") {
      c.t = num;
      ok = num >= 1;
    } else if (name == "k") {
      c.k = num;
      ok = num >= 1;
    } else if (name == "skewed") {
      c.skewed = num != 0;
    } else if (name == "repeats") {
      c.repeats = num != 0;
    } else if (name == "accumulate") {
      c.accumulate = num != 0;
    } else if (name == "unweighted") {
      c.unweighted = num != 0;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown MoE case field '", name, "'"));
    }
    if (!ok) return BadCaseField(name, value);
  }
  if (c.ldx == 0) c.ldx = d.hidden;
  if (c.ldy == 0) c.ldy = d.hidden;
  if (c.k > d.experts) {
    return absl::InvalidArgumentError(
        absl::StrCat("k = ", c.k, " is more than experts = ", d.experts));
  }
  return c;
}

MoeCase RandomMoeCase(std::mt19937_64* rng, internal::IsaTier isa,
                      int max_threads,
                      const std::vector<std::string>& backends) {
  static constexpr DType kScaleTypes[] = {DType::kF32, DType::kBF16,
                                          DType::kF16};
  static constexpr DType kIoTypes[] = {DType::kBF16, DType::kF32};
  static constexpr Activation kGates[] = {
      Activation::kSilu, Activation::kGeluErf, Activation::kGeluTanh,
      Activation::kSwigluOai};
  // Per channel (-1), even and odd groups, multiples of 4 and 8 or not.
  static constexpr int64_t kGroups[] = {-1, 3, 4, 8, 12, 16, 20, 32, 64, 128};
  MoeCase c;
  c.isa = isa;
  MoeDesc& d = c.desc;
  d.mode = Coin(rng) ? Mode::kW4A16 : Mode::kDA8W4;
  d.weight_type = Coin(rng) ? WeightType::kS4 : WeightType::kU4;
  c.format = Pick(rng, kAllFormats);
  c.stacked = Coin(rng);
  d.scale_dtype = Pick(rng, kScaleTypes);
  d.act_dtype = Pick(rng, kIoTypes);
  d.out_dtype = Pick(rng, kIoTypes);
  d.activation = Pick(rng, kGates);
  if (d.activation == Activation::kSwigluOai && Coin(rng, 0.3)) {
    // Other constants than gpt-oss's: the limit often inside the range
    // of the gate and up values, alpha of either sign.
    d.swiglu_alpha = static_cast<float>(Uniform(rng, -40, 40)) / 8.0f;
    d.swiglu_limit = static_cast<float>(Uniform(rng, 1, 64)) / 16.0f;
  }
  d.has_w13_bias = Coin(rng, 0.3);
  d.has_w2_bias = Coin(rng, 0.3);
  d.bias_dtype = Pick(rng, kIoTypes);
  // W4A16 with f32 x may round x and the intermediate to bf16; the oracle
  // bounds both (check/moe_check.cc).
  d.allow_bf16_compute =
      d.mode == Mode::kW4A16 && d.act_dtype == DType::kF32 && Coin(rng, 0.3);
  if (d.mode == Mode::kDA8W4 && Coin(rng)) d.act_quant = ActQuant::kPerGroup;

  d.experts = Uniform(rng, 1, 12);
  c.repeats = Coin(rng, 0.15);
  c.skewed = !c.repeats && Coin(rng, 0.3);
  c.k = Uniform(rng, 1, std::min<int64_t>(8, d.experts));
  const int64_t r = Uniform(rng, 0, 99);
  c.t = r < 50 ? Uniform(rng, 1, 8)
               : (r < 85 ? Uniform(rng, 9, 64) : Uniform(rng, 65, 160));

  // H and I: whole groups, and multiples of 8 where the format packs
  // either dimension of either projection by eights.
  const bool pack8 = NeedsK8(c.format) || NeedsN8(c.format, d.weight_type);
  const int64_t hi_budget =
      std::clamp<int64_t>(kMacBudget / (c.t * c.k), 64, 256 * 256);
  d.group_size = Pick(rng, kGroups);
  int64_t step = d.group_size == -1 ? 1 : d.group_size;
  if (pack8) step = std::lcm(step, int64_t{8});
  const int64_t max_units = std::max<int64_t>(1, 256 / step);
  d.hidden = step * Uniform(rng, 1, max_units);
  d.intermediate =
      step *
      Uniform(rng, 1,
              std::clamp<int64_t>(hi_budget / d.hidden / step, 1, max_units));
  c.ldx = d.hidden + (Coin(rng) ? 0 : Uniform(rng, 1, 9));
  c.ldy = d.hidden + (Coin(rng) ? 0 : Uniform(rng, 1, 9));
  c.accumulate = Coin(rng, 0.2);
  c.unweighted = Coin(rng, 0.2);
  c.threads = static_cast<int>(Uniform(rng, 1, std::max(1, max_threads)));
  c.backend = backends.empty() ? "pool"
                               : backends[static_cast<size_t>(Uniform(
                                     rng, 0, int64_t(backends.size()) - 1))];
  c.weight_seed = static_cast<uint32_t>((*rng)());
  c.x_seed = static_cast<uint32_t>((*rng)());
  return c;
}

CaseResult RunMoeCase(const MoeCase& c) {
  CaseResult result;
  if (!InstallSelftestBackend(c.backend, c.threads)) {
    result.error = absl::StrCat("unknown backend ", c.backend);
    return result;
  }
  internal::ScopedIsaCap cap(c.isa);
  const MoeDesc& d = c.desc;
  absl::StatusOr<MoeCheckpoint> ckpt =
      RandomMoeCheckpoint(d, c.format, c.weight_seed);
  if (!ckpt.ok()) {
    result.error = absl::StrCat("checkpoint: ", ckpt.status().ToString());
    return result;
  }
  MoeOptions options;
  options.force_reference = c.isa == internal::IsaTier::kRef;
  absl::StatusOr<std::unique_ptr<MoeLayer>> layer = MoeLayer::Create(
      d, c.stacked ? ckpt->Stacked() : ckpt->PerExpert(), options);
  if (!layer.ok()) {
    result.error =
        absl::StrCat("MoeLayer::Create: ", layer.status().ToString());
    return result;
  }
  const std::vector<std::string> names = (*layer)->kernel_names();
  result.on_jit = !names.empty() && names[0].rfind("reference", 0) != 0;

  const LayerDesc d13 = internal::MoeW13Desc(d);
  const std::vector<uint8_t> x = RandomActivations(d13, c.t, c.ldx, c.x_seed);
  LayerDesc dy = d13;
  dy.act_dtype = d.out_dtype;
  std::vector<uint8_t> y = RandomActivations(dy, c.t, c.ldy, c.x_seed + 1);
  const std::vector<uint8_t> y_before = y;
  std::mt19937_64 rng(c.x_seed + 2);
  const std::vector<int32_t> ids = Routing(c, &rng);
  std::vector<float> weights(ids.size());
  for (float& w : weights) {
    w = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  }
  const float* wp = c.unweighted ? nullptr : weights.data();
  MoeRunOptions run;
  run.accumulate = c.accumulate;
  run.unweighted = c.unweighted;
  const absl::Status s = (*layer)->Run(c.t, x.data(), c.ldx, ids.data(), wp,
                                       c.k, y.data(), c.ldy, run);
  if (!s.ok()) {
    result.error = absl::StrCat("Run: ", s.ToString());
    return result;
  }
  const MoeExpected want =
      MoeOracle(d, *ckpt, c.t, x.data(), c.ldx, ids.data(), wp, c.k,
                y_before.data(), c.ldy, c.accumulate);
  result.worst_ratio = WorstRatio(d, want, c.t, y.data(), c.ldy);
  std::string bad = CompareMoe(d, want, c.t, y.data(), c.ldy);
  const size_t es = internal::DTypeSize(d.out_dtype);
  for (int64_t i = 0; i < c.t && bad.empty(); ++i) {
    const size_t pad = static_cast<size_t>(i * c.ldy + d.hidden) * es;
    if (std::memcmp(y.data() + pad, y_before.data() + pad,
                    static_cast<size_t>(c.ldy - d.hidden) * es) != 0) {
      bad = absl::StrCat("the padding of y row ", i, " was written");
    }
  }
  result.ok = bad.empty();
  if (!result.ok) {
    result.error =
        absl::StrCat(bad, " (kernels: ", absl::StrJoin(names, " "), ")");
  }
  return result;
}

}  // namespace w4jit::check
