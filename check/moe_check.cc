#include "check/moe_check.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "check/layer_check.h"
#include "check/w4a16_magnitude.h"
#include "runtime/moe/moe_experts.h"

namespace w4jit::check {
namespace {

using internal::CanonicalWeights;
using internal::LoadAsF32;
using internal::OwnedCheckpoint;

template <class T>
void Append(std::vector<T>* to, const std::vector<T>& from) {
  to->insert(to->end(), from.begin(), from.end());
}

// The experts' files back to back; strides are expert 0's sizes (all
// experts' tensors have the same size).
OwnedCheckpoint Stack(const std::vector<OwnedCheckpoint>& files,
                      ExpertStrides* strides) {
  OwnedCheckpoint s;
  s.format = files[0].format;
  s.groups_major = files[0].groups_major;
  for (const OwnedCheckpoint& f : files) {
    Append(&s.qweight, f.qweight);
    Append(&s.scales, f.scales);
    Append(&s.zero_points, f.zero_points);
    Append(&s.g_idx, f.g_idx);
    Append(&s.bias, f.bias);
  }
  strides->qweight = static_cast<int64_t>(files[0].qweight.size());
  strides->scales = static_cast<int64_t>(files[0].scales.size());
  strides->zero_points = static_cast<int64_t>(files[0].zero_points.size());
  strides->bias = static_cast<int64_t>(files[0].bias.size());
  strides->g_idx = static_cast<int64_t>(files[0].g_idx.size());
  return s;
}

std::vector<WeightsView> Views(const std::vector<OwnedCheckpoint>& files) {
  std::vector<WeightsView> v;
  for (const OwnedCheckpoint& f : files) v.push_back(f.view());
  return v;
}

// (u - z) * s of every weight, row-major [n, k] (columns in kernel order:
// column c reads x[k_perm[c]]).
std::vector<double> Dequantize(const CanonicalWeights& w) {
  std::vector<double> d(static_cast<size_t>(w.n * w.k));
  for (int64_t r = 0; r < w.n; ++r) {
    for (int64_t c = 0; c < w.k; ++c) {
      const int64_t g = c / w.group_size;
      d[r * w.k + c] = static_cast<double>(w.U(r, c) - w.Z(r, g)) * w.S(r, g);
    }
  }
  return d;
}

double ActF64(Activation a, double t) {
  switch (a) {
    case Activation::kGeluTanh: {
      const double u = std::sqrt(2.0 / M_PI) * (t + 0.044715 * t * t * t);
      return 0.5 * t * (1.0 + std::tanh(u));
    }
    case Activation::kGeluErf:
      return 0.5 * t * (1.0 + std::erf(t / std::sqrt(2.0)));
    default:
      return t / (1.0 + std::exp(-t));
  }
}

double BfUlp(double v) {
  if (v == 0.0 || !std::isfinite(v)) return 0.0;
  int e;
  std::frexp(v, &e);
  return std::ldexp(1.0, e - 8);
}

// One matrix-vector product with its error bound: out = W a + b, where a
// is known to within ea[i] (a kernel saw some a' with |a' - a| <= ea) and
// DA8W4 quantizes a' with a step of (amax(a) + max ea) / 127.
struct Product {
  std::vector<double> value, err;
};
Product MatVec(const std::vector<double>& w, const CanonicalWeights& cw,
               const std::vector<double>& a, const std::vector<double>& ea,
               bool quantized) {
  double amax = 0.0, emax = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    amax = std::max(amax, std::fabs(a[i]));
    emax = std::max(emax, ea[i]);
  }
  // The quantizer's step is max(amax, 1e-10) / 127 (numerics.md).
  const double half_step =
      quantized ? std::max(amax + emax, 1e-10) / 127.0 / 2.0 : 0.0;
  Product p;
  p.value.resize(static_cast<size_t>(cw.n));
  p.err.resize(static_cast<size_t>(cw.n));
  for (int64_t r = 0; r < cw.n; ++r) {
    const double b = cw.bias.empty() ? 0.0 : cw.bias[r];
    double sum = b, mag = std::fabs(b), err = 0.0;
    // a's index of weight column c (act-order permutes it).
    auto src_of = [&](int64_t c) {
      return cw.k_perm.empty() ? c : static_cast<int64_t>(cw.k_perm[c]);
    };
    auto abs_a = [&](int64_t c) { return std::fabs(a[src_of(c)]); };
    for (int64_t c = 0; c < cw.k; ++c) {
      const int64_t src = src_of(c);
      const double wv = w[r * cw.k + c];
      sum += wv * a[src];
      // DA8W4's terms; W4A16's, with the corrections its kernels may fold
      // out, per group below (layer_check.h's T).
      if (quantized) mag += std::fabs(wv * a[src]);
      err += std::fabs(wv) * (ea[src] + half_step);
    }
    for (int64_t g = 0; g < cw.groups && !quantized; ++g) {
      mag += W4a16GroupMagnitude(cw, r, g, abs_a);
    }
    p.value[r] = sum;
    p.err[r] = err + 1e-5 * mag + 1e-30;
  }
  return p;
}

}  // namespace

MoeWeights MoeCheckpoint::PerExpert() const {
  return {Views(w13_files), Views(w2_files)};
}

MoeWeights MoeCheckpoint::Stacked() const {
  const int64_t experts = static_cast<int64_t>(w13.size());
  return {StackedExperts(w13_stacked.view(), w13_strides, experts),
          StackedExperts(w2_stacked.view(), w2_strides, experts)};
}

absl::StatusOr<MoeCheckpoint> RandomMoeCheckpoint(const MoeDesc& desc,
                                                  WeightFormat format,
                                                  uint32_t seed) {
  const LayerDesc d13 = internal::MoeW13Desc(desc);
  const LayerDesc d2 = internal::MoeW2Desc(desc);
  MoeCheckpoint c;
  for (int64_t e = 0; e < desc.experts; ++e) {
    c.w13.push_back(RandomWeights(d13, seed + 2 * static_cast<uint32_t>(e)));
    c.w2.push_back(RandomWeights(d2, seed + 2 * static_cast<uint32_t>(e) + 1));
    for (auto [desc_p, canon, files] :
         {std::tuple{&d13, &c.w13.back(), &c.w13_files},
          std::tuple{&d2, &c.w2.back(), &c.w2_files}}) {
      auto f = internal::ExportWeights(*desc_p, *canon, format);
      if (!f.ok()) return f.status();
      files->push_back(*std::move(f));
    }
  }
  c.w13_stacked = Stack(c.w13_files, &c.w13_strides);
  c.w2_stacked = Stack(c.w2_files, &c.w2_strides);
  return c;
}

MoeExpected MoeOracle(const MoeDesc& desc, const MoeCheckpoint& ckpt, int64_t t,
                      const void* x, int64_t ldx, const int32_t* ids,
                      const float* weights, int64_t k, const void* y_before,
                      int64_t ldy, bool accumulate) {
  const int64_t hidden = desc.hidden, inter = desc.intermediate;
  const bool quantized = desc.mode == Mode::kDA8W4;
  // The gate's largest slope: silu's 1.0998 (also that of swigluoai's
  // g sigmoid(alpha g), a scaled silu), gelu's 1.129.
  const double slope = desc.activation == Activation::kSilu ||
                               desc.activation == Activation::kSwigluOai
                           ? 1.1
                           : 1.13;
  const bool oai = desc.activation == Activation::kSwigluOai;
  const double alpha = desc.swiglu_alpha, limit = desc.swiglu_limit;
  std::vector<std::vector<double>> deq13(ckpt.w13.size()), deq2(ckpt.w2.size());
  MoeExpected out;
  out.value.assign(static_cast<size_t>(t * hidden), 0.0);
  out.tol.assign(static_cast<size_t>(t * hidden), 0.0);
  std::vector<double> xr(static_cast<size_t>(hidden));
  std::vector<double> h(static_cast<size_t>(inter)),
      eh(static_cast<size_t>(inter));
  // W4A16's bf16-dot flavour may round f32 x (allow_bf16_compute) and the
  // intermediate (that, or bf16 x) to bf16 (MoeDesc): half an ulp each.
  const bool w4a16 = desc.mode == Mode::kW4A16;
  const bool round_x = w4a16 && desc.allow_bf16_compute;
  const bool round_h =
      w4a16 && (desc.allow_bf16_compute || desc.act_dtype == DType::kBF16);
  std::vector<double> ex(static_cast<size_t>(hidden), 0.0);
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t c = 0; c < hidden; ++c) {
      xr[c] = LoadAsF32(x, desc.act_dtype, i * ldx + c);
      if (round_x) ex[c] = BfUlp(std::fabs(xr[c])) / 2;
    }
    std::vector<double> sum(static_cast<size_t>(hidden), 0.0),
        mag(static_cast<size_t>(hidden), 0.0),
        err(static_cast<size_t>(hidden), 0.0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = ids[i * k + j];
      if (deq13[e].empty()) {
        deq13[e] = Dequantize(ckpt.w13[e]);
        deq2[e] = Dequantize(ckpt.w2[e]);
      }
      const Product g = MatVec(deq13[e], ckpt.w13[e], xr, ex, quantized);
      for (int64_t r = 0; r < inter; ++r) {
        // Gate r and up r: rows r and I + r, or 2r and 2r + 1 (swigluoai).
        const int64_t gr = oai ? 2 * r : r;
        const int64_t ur = oai ? 2 * r + 1 : inter + r;
        double gv = g.value[gr], u = g.value[ur];
        const double eu = g.err[ur];
        if (oai) {
          // Clamps are 1-Lipschitz: the bounds pass through them.
          gv = std::min(gv, limit);
          u = std::clamp(u, -limit, limit) + 1.0;
        }
        const double a = oai ? gv / (1.0 + std::exp(-alpha * gv))
                             : ActF64(desc.activation, gv);
        h[r] = a * u;
        eh[r] = slope * g.err[gr] * (std::fabs(u) + eu) + std::fabs(a) * eu +
                1e-5 * std::fabs(h[r]) + 1e-30;
        if (round_h) eh[r] += BfUlp(std::fabs(h[r]) + eh[r]) / 2;
      }
      const Product o = MatVec(deq2[e], ckpt.w2[e], h, eh, quantized);
      const double w = weights == nullptr ? 1.0 : weights[i * k + j];
      for (int64_t c = 0; c < hidden; ++c) {
        sum[c] += w * o.value[c];
        mag[c] += std::fabs(w * o.value[c]);
        err[c] += std::fabs(w) * o.err[c];
      }
    }
    for (int64_t c = 0; c < hidden; ++c) {
      double v = sum[c], tol = err[c] + 1e-6 * mag[c] + 1e-6;
      if (accumulate) {
        const double before = LoadAsF32(y_before, desc.out_dtype, i * ldy + c);
        v += before;
        tol += 1e-6 * std::fabs(before);
      }
      if (desc.out_dtype == DType::kBF16) tol += BfUlp(std::fabs(v) + tol);
      out.value[i * hidden + c] = v;
      out.tol[i * hidden + c] = tol;
    }
  }
  return out;
}

std::string CompareMoe(const MoeDesc& desc, const MoeExpected& want, int64_t t,
                       const void* y, int64_t ldy) {
  std::string bad;
  int shown = 0;
  int64_t count = 0;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t c = 0; c < desc.hidden; ++c) {
      const double got = LoadAsF32(y, desc.out_dtype, i * ldy + c);
      const double v = want.value[i * desc.hidden + c];
      const double tol = want.tol[i * desc.hidden + c];
      if (std::fabs(got - v) <= tol) continue;  // false for NaN too
      ++count;
      if (shown++ < 5) {
        absl::StrAppendFormat(&bad, " y[%d, %d] = %g, want %g +- %g;", i, c,
                              got, v, tol);
      }
    }
  }
  if (count == 0) return "";
  return absl::StrCat(count, " mismatches:", bad);
}

}  // namespace w4jit::check
