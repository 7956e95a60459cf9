#include "runtime/epilogue_ref.h"

#include <cmath>

namespace w4jit::internal {
namespace {

// 1 / (1 + exp(-t)) without overflow, and relatively accurate for t << 0
// (where it is exp(t) / (1 + exp(t))).
float SigmoidRef(float t) {
  if (t >= 0.0f) return 1.0f / (1.0f + std::exp(-t));
  const float e = std::exp(t);
  return e / (1.0f + e);
}

// Phi(t) = (1 + erf(t / sqrt 2)) / 2, through erfc on the side where
// 1 + erf cancels.
float NormalCdfRef(float t) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  if (t >= 0.0f) return 1.0f - 0.5f * std::erfc(t * kInvSqrt2);
  return 0.5f * std::erfc(-t * kInvSqrt2);
}

}  // namespace

float ActivationRef(Activation a, float t) {
  switch (a) {
    case Activation::kNone:
      return t;
    case Activation::kRelu:
      // max(t, 0) that keeps a NaN.
      return t < 0.0f ? 0.0f : t;
    case Activation::kSigmoid:
      return SigmoidRef(t);
    case Activation::kSilu:
      return t * SigmoidRef(t);
    case Activation::kGeluTanh: {
      // t/2 (1 + tanh(u)) = t * sigmoid(2u), u = sqrt(2/pi)(t + 0.044715t^3)
      constexpr float kC = 0.79788456080286536f;  // sqrt(2 / pi)
      const float u = kC * (t + 0.044715f * t * t * t);
      return t * SigmoidRef(2.0f * u);
    }
    case Activation::kGeluErf:
      return t * NormalCdfRef(t);
    case Activation::kSwigluOai:
      // A pair function (SwigluOaiRef); alone it is not defined.
      return t;
  }
  return t;
}

float SwigluOaiRef(float g, float u, float alpha, float limit) {
  // min / clamp that keep a NaN (as torch.clamp does).
  g = g > limit ? limit : g;
  u = u > limit ? limit : (u < -limit ? -limit : u);
  return g * SigmoidRef(alpha * g) * (u + 1.0f);
}

float EpilogueRef(const Epilogue& e, float t, float up, const float* operands) {
  float v = !e.silu_mul ? ActivationRef(e.activation, t)
            : e.activation == Activation::kSwigluOai
                ? SwigluOaiRef(t, up, e.gate_alpha, e.gate_limit)
                : ActivationRef(e.gate_activation(), t) * up;
  for (int i = 0; i < e.num_binary; ++i) {
    v = e.binary[i].op == BinaryOp::kMul ? v * operands[i] : v + operands[i];
  }
  return v;
}

}  // namespace w4jit::internal
