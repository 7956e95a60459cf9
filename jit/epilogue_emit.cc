#include "jit/epilogue_emit.h"

#include <algorithm>
#include <cstring>

namespace w4jit::internal {
namespace {

using Xbyak::Xmm;
using Xbyak::util::ptr;

uint32_t Bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// exp(r) = 1 + r + r^2 P(r) on [-ln2/2, ln2/2], P of degree 5: the
// classic minimax coefficients (Cephes expf), highest first.
constexpr float kExpPoly[] = {1.9875691500e-4f, 1.3981999507e-3f,
                              8.3334519073e-3f, 4.1665795894e-2f,
                              1.6666665459e-1f, 5.0000001201e-1f};
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;  // exact in 9 bits: n * hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;
// Below this exp(x) is flushed to 0: n = round(x * log2 e) reaches -127,
// whose 2^n bit pattern (exponent field 0) is +0.
constexpr float kExpMin = -88.0f;

// erfc(t) = exp(-t^2) R(u), u = 1 / (1 + t / 2), t >= 0: R a degree-9
// polynomial in u fitted (least squares in relative error, float64) to
// erfc(t) exp(t^2) on t in [0, 9.3]; lowest degree first. Max relative
// error of R in f32 Horner: 3.2e-7.
constexpr float kErfcPoly[] = {
    -2.9750951853e-06f, 0.28214460611f,  0.28191158175f, 0.24505180120f,
    0.19806046784f,     -0.02060752362f, 0.27479302883f, -0.48829561472f,
    0.28677329421f,     -0.05982879549f};
// Beyond |t| = 14 (t / sqrt 2 = 9.9), exp(-t^2 / 2) is 0 in f32.
constexpr float kErfcClamp = 14.0f;

}  // namespace

Xbyak::Address EpilogueEmitter::F(float v) const {
  return pool_->Splat32(Bits(v));
}

void EpilogueEmitter::SelectNegative(const Xmm& dst, const Xmm& if_neg,
                                     const Xmm& sel) const {
  if (vec_.avx512()) {
    const Xbyak::Opmask k(6);
    g_->vpcmpd(k, sel, pool_->Splat32(0), 1);  // int32 less than: sign set
    g_->vblendmps(dst | k, dst, if_neg);
  } else {
    g_->vblendvps(dst, dst, if_neg, sel);
  }
}

void EpilogueEmitter::Exp(const Xmm& x, const Xmm& ta, const Xmm& tb) const {
  // Clamp from below keeping NaN (vmaxps returns its second source if
  // either is NaN).
  g_->vmovups(ta, F(kExpMin));
  g_->vmaxps(x, ta, x);
  // n = round(x log2 e); r = x - n ln2 in two steps (n * hi exact).
  g_->vmulps(ta, x, F(kLog2e));
  if (vec_.avx512()) {
    g_->vrndscaleps(ta, ta, 0);
  } else {
    g_->vroundps(ta, ta, 0);
  }
  g_->vfnmadd231ps(x, ta, F(kLn2Hi));
  g_->vfnmadd231ps(x, ta, F(kLn2Lo));
  g_->vmovups(tb, F(kExpPoly[0]));
  for (size_t i = 1; i < sizeof(kExpPoly) / sizeof(kExpPoly[0]); ++i) {
    g_->vfmadd213ps(tb, x, F(kExpPoly[i]));
  }
  g_->vmulps(tb, tb, x);
  g_->vfmadd213ps(tb, x, x);  // r^2 P + r
  g_->vaddps(tb, tb, F(1.0f));
  // * 2^n, n in [-127, 0]: (n + 127) << 23 is 2^n, or +0 for n = -127.
  g_->vcvtps2dq(ta, ta);
  g_->vpaddd(ta, ta, pool_->Splat32(127));
  g_->vpslld(ta, ta, 23);
  g_->vmulps(x, tb, ta);
}

void EpilogueEmitter::Sigmoid(const Xmm& out, const Xmm& in, const Xmm& ta,
                              const Xmm& tb) const {
  // e = exp(-|in|) in (0, 1]; r = 1 / (1 + e) is sigmoid(|in|) and
  // e * r = sigmoid(-|in|): no overflow, relative accuracy on both sides.
  vec_.Or(ta, in, pool_->Splat32(0x80000000u));
  Exp(ta, out, tb);
  g_->vaddps(out, ta, F(1.0f));
  g_->vmovups(tb, F(1.0f));
  g_->vdivps(out, tb, out);
  g_->vmulps(ta, ta, out);
  SelectNegative(out, ta, in);
}

void EpilogueEmitter::EmitActivation(w4jit::Activation a, const Xmm& v,
                                     const Temps& t) const {
  switch (a) {
    case Activation::kNone:
    case Activation::kSwigluOai:  // a pair function: Apply
      return;
    case Activation::kRelu:
      // max(0, v) returning v when it is NaN.
      g_->vxorps(t[0], t[0], t[0]);
      g_->vmaxps(v, t[0], v);
      return;
    case Activation::kSigmoid:
      Sigmoid(t[0], v, t[1], t[2]);
      g_->vmovaps(v, t[0]);
      return;
    case Activation::kSilu:
      Sigmoid(t[0], v, t[1], t[2]);
      g_->vmulps(v, v, t[0]);
      return;
    case Activation::kGeluTanh: {
      // v/2 (1 + tanh(u)) = v sigmoid(2u), 2u = v (a + b v^2).
      constexpr double kC = 0.7978845608028654;  // sqrt(2 / pi)
      g_->vmulps(t[3], v, v);
      g_->vmulps(t[3], t[3], F(static_cast<float>(2.0 * kC * 0.044715)));
      g_->vaddps(t[3], t[3], F(static_cast<float>(2.0 * kC)));
      g_->vmulps(t[3], t[3], v);
      Sigmoid(t[0], t[3], t[1], t[2]);
      g_->vmulps(v, v, t[0]);
      return;
    }
    case Activation::kGeluErf: {
      // v Phi(v); q = Phi(-|v|) = erfc(|v| / sqrt 2) / 2
      //   = exp(-a^2 / 2) R(u) / 2, a = min(|v|, 14), u = 1 / (1 + a / (2
      //   sqrt 2)); a^2 split into h + l exactly (FMA) so that exp(-a^2/2)
      //   = exp(-h/2) (1 - l/2) keeps its relative accuracy for large a.
      //   Phi(v) = v < 0 ? q : 1 - q.
      const Xmm &a = t[0], &u = t[1], &corr = t[2], &h = t[3];
      vec_.And(a, v, pool_->Splat32(0x7FFFFFFFu));
      g_->vminps(a, a, F(kErfcClamp));
      g_->vmulps(h, a, a);
      g_->vmovaps(corr, h);
      g_->vfmsub231ps(corr, a, a);  // l = a * a - h, exact
      g_->vmulps(corr, corr, F(-0.5f));
      g_->vaddps(corr, corr, F(1.0f));
      g_->vmulps(u, a, F(static_cast<float>(0.5 / 1.4142135623730951)));
      g_->vaddps(u, u, F(1.0f));
      g_->vmovups(a, F(1.0f));
      g_->vdivps(u, a, u);
      constexpr int kDeg = sizeof(kErfcPoly) / sizeof(kErfcPoly[0]) - 1;
      g_->vmovups(a, F(kErfcPoly[kDeg]));
      for (int i = kDeg - 1; i >= 0; --i)
        g_->vfmadd213ps(a, u, F(kErfcPoly[i]));
      g_->vmulps(corr, corr, a);  // (1 - l/2) R(u)
      g_->vmulps(h, h, F(-0.5f));
      Exp(h, a, u);
      g_->vmulps(h, h, corr);
      g_->vmulps(h, h, F(0.5f));  // q
      g_->vmovups(a, F(1.0f));
      g_->vsubps(a, a, h);  // 1 - q
      SelectNegative(a, h, v);
      g_->vmulps(v, v, a);
      return;
    }
  }
}

void EpilogueEmitter::LoadF32(const Xmm& dst, const Xbyak::RegExp& src,
                              DType dtype, int count) const {
  const bool f32 = dtype == DType::kF32;
  const int lanes = vec_.lanes32();
  if (count >= lanes) {
    if (f32) {
      g_->vmovups(dst, ptr[src]);
    } else {
      g_->vpmovzxwd(dst, ptr[src]);
      g_->vpslld(dst, dst, 16);
    }
    return;
  }
  if (vec_.avx512()) {
    // Masked-off lanes of a masked load never fault.
    const Xbyak::Opmask k(7);
    g_->kmovw(k, pool_->Splat32((1u << count) - 1));
    if (f32) {
      g_->vmovups(dst | k | Xbyak::util::T_z, ptr[src]);
    } else {
      g_->vpmovzxwd(dst | k | Xbyak::util::T_z, ptr[src]);
      g_->vpslld(dst, dst, 16);
    }
    return;
  }
  if (f32) {
    std::array<uint32_t, 16> mask{};
    for (int i = 0; i < count; ++i) mask[i] = 0xFFFFFFFFu;
    g_->vmovups(dst, pool_->Table(mask));
    g_->vmaskmovps(dst, dst, ptr[src]);
    return;
  }
  const Xmm x(dst.getIdx());
  g_->vpxor(x, x, x);
  for (int i = 0; i < count; ++i) g_->vpinsrw(x, x, ptr[src + 2 * i], i);
  g_->vpmovzxwd(dst, x);
  g_->vpslld(dst, dst, 16);
}

void EpilogueEmitter::EmitTileStores(const TileStores& s) const {
  const Xmm val = vec_.Vec(0), up = vec_.Vec(1);
  const Temps t = {vec_.Vec(2), vec_.Vec(3), vec_.Vec(4), vec_.Vec(5)};
  const bool pair = e_.silu_mul;
  for (int r = 0; r < s.rows; ++r) {
    for (int o = 0; o < s.out_vectors; ++o) {
      const int col = (s.first_vector + o) * vec_.lanes32();
      const int count = static_cast<int>(
          std::clamp<int64_t>(s.out_cols - col, 0, vec_.lanes32()));
      if (count == 0) continue;
      s.value(val, r, pair ? 2 * o : o);
      if (pair) s.value(up, r, 2 * o + 1);
      Apply(val, pair ? &up : nullptr, s.operands, col, count, t);
      if (s.out_dtype == DType::kF32) {
        vec_.StoreF32(s.y + col * 4, val, count, t[0], s.gpr_tmp);
      } else {
        vec_.StoreBf16(s.y + col * 2, val, count, t[0], t[1], s.gpr_tmp, pool_);
      }
    }
    if (r + 1 == s.rows) break;
    g_->add(s.y, g_->ptr[s.ldy_at]);
    for (int i = 0; i < e_.num_binary; ++i) {
      g_->add(s.operands[i], g_->ptr[s.ep_ld_at + 8 * i]);
    }
  }
}

void EpilogueEmitter::Apply(const Xmm& v, const Xmm* up,
                            const Xbyak::Reg64* operands, int64_t col,
                            int count, const Temps& t) const {
  if (e_.silu_mul && e_.activation == Activation::kSwigluOai) {
    // g = min(g, limit), u = clamp(u, -limit, limit), keeping NaNs (vminps
    // and vmaxps return their second source if either is NaN); then
    // v = g * sigmoid(alpha g) * (u + 1), in SwigluOaiRef's order.
    g_->vmovups(t[0], F(e_.gate_limit));
    g_->vminps(v, t[0], v);
    g_->vminps(*up, t[0], *up);
    g_->vmovups(t[0], F(-e_.gate_limit));
    g_->vmaxps(*up, t[0], *up);
    g_->vmulps(t[3], v, F(e_.gate_alpha));
    Sigmoid(t[0], t[3], t[1], t[2]);
    g_->vmulps(v, v, t[0]);
    g_->vaddps(*up, *up, F(1.0f));
    g_->vmulps(v, v, *up);
  } else if (e_.silu_mul) {
    EmitActivation(e_.gate_activation(), v, t);
    g_->vmulps(v, v, *up);
  } else {
    EmitActivation(e_.activation, v, t);
  }
  for (int i = 0; i < e_.num_binary; ++i) {
    LoadF32(t[0], operands[i] + col * OperandSize(i), e_.binary[i].dtype,
            count);
    if (e_.binary[i].op == BinaryOp::kMul) {
      g_->vmulps(v, v, t[0]);
    } else {
      g_->vaddps(v, v, t[0]);
    }
  }
}

}  // namespace w4jit::internal
