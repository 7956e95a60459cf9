#include "check/layer_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "check/w4a16_magnitude.h"
#include "runtime/epilogue_ref.h"
#include "runtime/formats/import.h"
#include "runtime/reference.h"

namespace w4jit::check {
namespace {

using internal::CanonicalWeights;
using internal::DTypeSize;
using internal::LoadAsF32;

int MantissaBits(DType t) {
  switch (t) {
    case DType::kF32:
      return 23;
    case DType::kBF16:
      return 7;
    case DType::kF16:
      return 10;
  }
  return 7;
}

// ±(1 + m / 2^bits) * 2^e with e in [min_exp, max_exp]: exactly
// representable in any dtype with `bits` mantissa bits whose normal range
// covers the exponents.
float RandomFloat(std::mt19937* rng, DType t, int min_exp, int max_exp) {
  const int bits = MantissaBits(t);
  std::uniform_int_distribution<uint32_t> mant(0, (1u << bits) - 1);
  std::uniform_int_distribution<int> exp(min_exp, max_exp);
  std::bernoulli_distribution negative(0.5);
  const float magnitude = std::ldexp(
      1.0f + std::ldexp(static_cast<float>(mant(*rng)), -bits), exp(*rng));
  return negative(*rng) ? -magnitude : magnitude;
}

// Output sentinel: a signalling NaN, which no arithmetic produces.
constexpr uint32_t kSentinelF32 = 0x7FA5A5A5u;
constexpr uint16_t kSentinelBf16 = 0x7FA5u;
constexpr int64_t kGuardElements = 32;

uint32_t ElementBits(const uint8_t* p, size_t esize, int64_t i) {
  if (esize == 4) {
    uint32_t v;
    std::memcpy(&v, p + i * 4, 4);
    return v;
  }
  uint16_t v;
  std::memcpy(&v, p + i * 2, 2);
  return v;
}

double BfUlp(double v) {
  if (v == 0.0 || !std::isfinite(v)) return 0.0;
  int e;
  std::frexp(v, &e);  // v = f * 2^e, f in [0.5, 1): bf16 ulp is 2^(e - 8)
  return std::ldexp(1.0, e - 8);
}

}  // namespace

CanonicalWeights RandomWeights(const LayerDesc& desc, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> nibble(0, 15);
  CanonicalWeights w = internal::CanonicalShape(desc);
  w.u.resize(static_cast<size_t>(w.n * w.k));
  for (auto& u : w.u) u = static_cast<uint8_t>(nibble(rng));
  w.zeros.resize(static_cast<size_t>(w.n * w.groups));
  for (auto& z : w.zeros) {
    z = w.asymmetric ? static_cast<uint8_t>(nibble(rng)) : 8;
  }
  w.scales.resize(static_cast<size_t>(w.n * w.groups));
  for (auto& s : w.scales) s = RandomFloat(&rng, desc.scale_dtype, -8, -5);
  if (w.float_zero()) {
    // Float zero points: all integer zeros 8, zf of the weights' size.
    w.zeros.assign(w.zeros.size(), 8);
    for (auto& z : w.float_zeros) {
      z = RandomFloat(&rng, desc.zero_point_dtype, -8, -2);
    }
  }
  if (desc.has_bias) {
    w.bias.resize(static_cast<size_t>(w.n));
    for (auto& b : w.bias) b = RandomFloat(&rng, desc.bias_dtype, -4, 0);
  }
  return w;
}

std::vector<int32_t> RandomActOrder(const LayerDesc& desc, uint32_t seed) {
  const int64_t group = desc.effective_group_size();
  std::vector<int32_t> perm(static_cast<size_t>(desc.k));
  for (int64_t i = 0; i < desc.k; ++i) perm[i] = static_cast<int32_t>(i);
  std::mt19937 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (int64_t g0 = 0; g0 < desc.k; g0 += group) {
    std::sort(perm.begin() + g0, perm.begin() + g0 + group);
  }
  return perm;
}

void SetActivation(const LayerDesc& desc, std::vector<uint8_t>* x, int64_t ldx,
                   int64_t row, int64_t col, float v) {
  internal::StoreFromF32(x->data(), desc.act_dtype, row * ldx + col, v);
}

std::vector<uint8_t> RandomActivations(const LayerDesc& desc, int64_t m,
                                       int64_t ldx, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> x(static_cast<size_t>(m * ldx) *
                         DTypeSize(desc.act_dtype));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldx; ++j) {
      const float v =
          j < desc.k ? normal(rng) : std::numeric_limits<float>::quiet_NaN();
      SetActivation(desc, &x, ldx, i, j, v);
    }
  }
  return x;
}

absl::StatusOr<std::unique_ptr<Layer>> MakeLayer(const LayerDesc& desc,
                                                 const CanonicalWeights& w,
                                                 const LayerOptions& options) {
  absl::StatusOr<internal::OwnedCheckpoint> ckpt =
      internal::ExportWeights(desc, w, WeightFormat::kUnpackedInt8);
  if (!ckpt.ok()) return ckpt.status();
  return Layer::Create(desc, ckpt->view(), options);
}

Expected ExpectedAt(const LayerDesc& desc, const CanonicalWeights& w,
                    const void* x_row, const internal::QuantizedRow& q,
                    int64_t j, int32_t* acc) {
  double t = 0.0;
  float value;
  if (desc.mode == Mode::kDA8W4) {
    internal::Da8w4GroupAccRef(w, q, j, acc);
    const bool per_group = !q.group_scales.empty();
    for (int64_t g = 0; g < w.groups; ++g) {
      const double sa = per_group ? q.group_scales[g] : 1.0;
      t += std::fabs(static_cast<double>(w.S(j, g)) * acc[g] * sa);
    }
    t *= std::fabs(q.scale);
    value = internal::Da8w4OutputRef(w, q, j);
  } else {
    for (int64_t g = 0; g < w.groups; ++g) {
      t += W4a16GroupMagnitude(w, j, g, [&](int64_t k) {
        return std::fabs(
            static_cast<double>(LoadAsF32(x_row, desc.act_dtype, k)));
      });
    }
    value =
        internal::W4a16OutputRef(w, x_row, desc.act_dtype, j, desc.numerics);
  }
  if (!w.bias.empty()) t += std::fabs(w.bias[j]);
  return {value, t};
}

std::vector<Expected> ExpectedRow(const LayerDesc& desc,
                                  const CanonicalWeights& w,
                                  const void* x_row) {
  std::vector<Expected> out(static_cast<size_t>(w.n));
  // Act-order: the reference works on the permuted K, as the kernels do.
  std::vector<uint8_t> permuted;
  x_row = internal::ActOrderRow(x_row, desc.act_dtype, w.k_perm, &permuted);
  internal::QuantizedRow q;
  if (desc.mode == Mode::kDA8W4) {
    q = internal::QuantizeRowRef(x_row, desc.act_dtype, desc.k, desc.group_size,
                                 desc.act_per_group());
  }
  std::vector<int32_t> acc(static_cast<size_t>(w.groups));
  for (int64_t j = 0; j < w.n; ++j) {
    out[j] = ExpectedAt(desc, w, x_row, q, j, acc.data());
  }
  return out;
}

double Tolerance(const LayerDesc& desc, const Expected& e) {
  double tol = 1e-5 * e.magnitude + 1e-6;
  if (desc.mode == Mode::kW4A16 && desc.act_dtype == DType::kF32 &&
      desc.allow_bf16_compute) {
    tol += std::ldexp(e.magnitude, -8);
  }
  if (desc.out_dtype == DType::kBF16) {
    tol += BfUlp(std::fabs(static_cast<double>(e.value)) + tol);
  }
  return tol;
}

EpilogueInputs EpilogueOperands::inputs() const {
  EpilogueInputs in;
  for (int i = 0; i < 2; ++i) {
    in.data[i] = data[i].empty() ? nullptr : data[i].data();
    in.ld[i] = ld[i];
  }
  return in;
}

EpilogueOperands RandomEpilogueOperands(const LayerDesc& desc, int64_t m,
                                        int64_t pad, uint32_t seed) {
  EpilogueOperands ops;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  const int64_t n_out = desc.out_n();
  for (int b = 0; b < desc.epilogue.num_binary; ++b) {
    const DType t = desc.epilogue.binary[b].dtype;
    ops.ld[b] = n_out + pad + 2 * b;
    ops.data[b].resize(
        static_cast<size_t>(std::max<int64_t>(m, 1) * ops.ld[b]) *
        DTypeSize(t));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < ops.ld[b]; ++j) {
        const float v =
            j < n_out ? dist(rng) : std::numeric_limits<float>::quiet_NaN();
        internal::StoreFromF32(ops.data[b].data(), t, i * ops.ld[b] + j, v);
      }
    }
  }
  return ops;
}

namespace {

// Largest |d activation / dt|.
double ActivationSlope(Activation a) {
  switch (a) {
    case Activation::kSigmoid:
      return 0.25;
    case Activation::kSilu:
      return 1.1;
    case Activation::kGeluTanh:
    case Activation::kGeluErf:
      return 1.13;
    default:
      return 1.0;
  }
}

}  // namespace

EpilogueExpectation ExpectEpilogue(const LayerDesc& desc,
                                   const std::vector<Expected>& t,
                                   const EpilogueOperands& ops, int64_t i,
                                   int64_t j) {
  const Epilogue& e = desc.epilogue;
  LayerDesc plain = desc;
  plain.epilogue = Epilogue{};
  plain.out_dtype = DType::kF32;
  float opv[2] = {0.0f, 0.0f};
  for (int b = 0; b < e.num_binary; ++b) {
    opv[b] =
        LoadAsF32(ops.data[b].data(), e.binary[b].dtype, i * ops.ld[b] + j);
  }
  const Expected& g = t[j];
  const double tol_g = Tolerance(plain, g);
  double want, tol;
  if (e.silu_mul && e.activation == Activation::kSwigluOai) {
    // g' sigmoid(alpha g') (u' + 1): the clamps are 1-Lipschitz, g'
    // sigmoid(alpha g') has silu's slope (a scaled silu).
    const Expected& u = t[desc.n / 2 + j];
    const double tol_u = Tolerance(plain, u);
    want = internal::EpilogueRef(e, g.value, u.value, opv);
    const double gc = std::min<double>(g.value, e.gate_limit);
    const double up = std::fabs(
        std::clamp<double>(u.value, -e.gate_limit, e.gate_limit) + 1.0);
    const double s = std::fabs(
        gc / (1.0 + std::exp(-static_cast<double>(e.gate_alpha) * gc)));
    tol = ActivationSlope(Activation::kSilu) * tol_g * (up + tol_u) +
          s * tol_u + kEpilogueRelErr * s * up;
  } else if (e.silu_mul) {
    const Expected& u = t[desc.n / 2 + j];
    const double tol_u = Tolerance(plain, u);
    want = internal::EpilogueRef(e, g.value, u.value, opv);
    const double s = std::fabs(static_cast<double>(
        internal::ActivationRef(e.gate_activation(), g.value)));
    tol = ActivationSlope(e.gate_activation()) * tol_g *
              (std::fabs(u.value) + tol_u) +
          s * tol_u + kEpilogueRelErr * s * std::fabs(u.value);
  } else {
    want = internal::EpilogueRef(e, g.value, 0.0f, opv);
    tol = ActivationSlope(e.activation) * tol_g +
          kEpilogueRelErr *
              std::fabs(internal::ActivationRef(e.activation, g.value));
  }
  for (int b = 0; b < e.num_binary; ++b) {
    if (e.binary[b].op == BinaryOp::kMul) tol *= std::fabs(opv[b]);
  }
  tol += 1e-6 * (std::fabs(want) + 4.0) + 1e-30;  // f32 roundings of the ops
  if (desc.out_dtype == DType::kBF16) tol += BfUlp(std::fabs(want) + tol);
  return {want, tol};
}

CheckResult CheckRun(const Layer& layer, const CanonicalWeights& w, int64_t m,
                     const void* x, int64_t ldx, int64_t ldy, void* y_out,
                     const EpilogueOperands* ops) {
  CheckResult result;
  const LayerDesc& desc = layer.desc();
  const size_t esize = DTypeSize(desc.out_dtype);
  const uint32_t sentinel = esize == 4 ? kSentinelF32 : kSentinelBf16;
  // Own buffer: sentinel guard elements on both sides. Caller's: exactly
  // m * ldy elements (its ends are the caller's to guard).
  const int64_t guard = y_out == nullptr ? kGuardElements : 0;
  const int64_t total = m * ldy + 2 * guard;
  std::vector<uint8_t> own(y_out == nullptr ? static_cast<size_t>(total) * esize
                                            : 0);
  uint8_t* buf = y_out == nullptr ? own.data() : static_cast<uint8_t*>(y_out);
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(buf + i * esize, &sentinel, esize);
  }
  uint8_t* y = buf + guard * esize;
  const bool epilogue = !desc.epilogue.empty();
  const EpilogueOperands no_ops;
  if (ops == nullptr) ops = &no_ops;
  const int64_t n_out = desc.out_n();
  if (absl::Status s = epilogue ? layer.Run(m, x, ldx, y, ldy, ops->inputs())
                                : layer.Run(m, x, ldx, y, ldy);
      !s.ok()) {
    result.report = absl::StrCat("Run failed: ", s.ToString());
    return result;
  }
  result.ran = true;

  auto fail = [&](const std::string& line) {
    if (++result.bad <= 8) result.report += line + "\n";
  };
  const size_t xsize = DTypeSize(desc.act_dtype);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  for (int64_t i = 0; i < m; ++i) {
    const std::vector<Expected> want =
        ExpectedRow(desc, w, xb + i * ldx * xsize);
    for (int64_t j = 0; j < n_out; ++j) {
      const int64_t idx = i * ldy + j;
      if (ElementBits(y, esize, idx) == sentinel) {
        fail(absl::StrFormat("y[%d, %d] was not written", i, j));
        continue;
      }
      const float got = LoadAsF32(y, desc.out_dtype, idx);
      Expected e = want[j];
      double tol = Tolerance(desc, e);
      if (epilogue) {
        const EpilogueExpectation ee = ExpectEpilogue(desc, want, *ops, i, j);
        e.value = static_cast<float>(ee.value);
        tol = ee.tolerance;
      }
      bool ok;
      if (std::isinf(e.value) && std::isnan(got) && desc.mode == Mode::kW4A16) {
        // A W4A16 row holding Inf: NaN, or the exact +-Inf where the
        // kernel's sums all agree on it (docs/numerics.md; the f32 int4
        // kernel's recombined pairs meet an Inf in x as Inf - Inf).
        ok = true;
      } else if (std::isnan(e.value) || std::isnan(got)) {
        ok = std::isnan(e.value) && std::isnan(got);
      } else if (std::isinf(e.value) || std::isinf(got)) {
        ok = e.value == got;
      } else {
        const double diff = std::fabs(static_cast<double>(got) - e.value);
        ok = diff <= tol;
        result.worst_ratio = std::max(result.worst_ratio, diff / tol);
      }
      if (!ok) {
        fail(absl::StrFormat(
            "y[%d, %d]: got %.9g, want %.9g (diff %.3g, tolerance %.3g, "
            "term magnitude %.3g)",
            i, j, got, e.value, std::fabs(static_cast<double>(got) - e.value),
            tol, e.magnitude));
      }
    }
    for (int64_t j = n_out; j < ldy; ++j) {
      if (ElementBits(y, esize, i * ldy + j) != sentinel) {
        fail(absl::StrFormat("padding y[%d, %d] (N = %d, ldy = %d) was written",
                             i, j, n_out, ldy));
      }
    }
  }
  for (int64_t i = 0; i < guard; ++i) {
    if (ElementBits(buf, esize, i) != sentinel) {
      fail(absl::StrFormat("guard element %d before y was written",
                           kGuardElements - i));
    }
    if (ElementBits(y, esize, m * ldy + i) != sentinel) {
      fail(absl::StrFormat("guard element %d after y[m * ldy] was written", i));
    }
  }
  return result;
}

absl::StatusOr<std::vector<float>> RunToF32(const Layer& layer, int64_t m,
                                            const std::vector<uint8_t>& x,
                                            int64_t ldx) {
  const LayerDesc& desc = layer.desc();
  std::vector<uint8_t> y(static_cast<size_t>(m * desc.n) *
                         DTypeSize(desc.out_dtype));
  if (absl::Status s = layer.Run(m, x.data(), ldx, y.data(), desc.n); !s.ok()) {
    return s;
  }
  std::vector<float> out(static_cast<size_t>(m * desc.n));
  for (int64_t i = 0; i < m * desc.n; ++i) {
    out[i] = LoadAsF32(y.data(), desc.out_dtype, i);
  }
  return out;
}

std::vector<double> DequantMatmulF64(const LayerDesc& desc,
                                     const CanonicalWeights& w, int64_t m,
                                     const void* x, int64_t ldx) {
  std::vector<double> y(static_cast<size_t>(m * w.n));
  std::vector<double> wrow(static_cast<size_t>(w.k));
  for (int64_t j = 0; j < w.n; ++j) {
    for (int64_t k = 0; k < w.k; ++k) {
      const int64_t g = k / w.group_size;
      wrow[k] = static_cast<double>(w.U(j, k) - w.Z(j, g)) * w.S(j, g);
      if (w.float_zero()) wrow[k] += w.FZ(j, g);  // (u - 8) * s + zf
      if (desc.numerics == Numerics::kZentorch) {
        // The weight zentorch multiplies with: the f32 dequantization
        // rounded to bf16 (reference.cc).
        float wf = static_cast<float>(w.U(j, k) - w.Z(j, g)) * w.S(j, g);
        if (w.float_zero()) wf += w.FZ(j, g);
        wrow[k] = internal::Bf16ToF32(internal::F32ToBf16(wf));
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      double sum = w.bias.empty() ? 0.0 : w.bias[j];
      for (int64_t k = 0; k < w.k; ++k) {
        const int64_t xk = w.k_perm.empty() ? k : w.k_perm[k];
        sum += wrow[k] * LoadAsF32(x, desc.act_dtype, i * ldx + xk);
      }
      y[i * w.n + j] = sum;
    }
  }
  return y;
}

std::string Describe(const LayerDesc& d) {
  std::string s = absl::StrFormat(
      "n=%d k=%d g=%d %s %s act=%s out=%s scale=%s", d.n, d.k, d.group_size,
      ToString(d.weight_type), ToString(d.mode), ToString(d.act_dtype),
      ToString(d.out_dtype), ToString(d.scale_dtype));
  if (d.has_bias) s += absl::StrCat(" bias=", ToString(d.bias_dtype));
  if (d.allow_bf16_compute) s += " allow_bf16_compute";
  if (d.numerics != Numerics::kExact) {
    s += absl::StrCat(" numerics=", ToString(d.numerics));
  }
  if (d.act_quant != ActQuant::kPerToken) {
    s += absl::StrCat(" act_quant=", ToString(d.act_quant));
  }
  if (d.zero_point_domain == ZeroPointDomain::kFloat) {
    s += absl::StrCat(" zp=float-", ToString(d.zero_point_dtype));
  }
  return s;
}

}  // namespace w4jit::check
