// The fused epilogue (LayerDesc::epilogue) in portable f32, as the
// reference path computes it. Each activation is evaluated in a form that
// is accurate over the whole f32 range (no cancellation in 1 + tanh or
// 1 + erf for negative arguments); docs/epilogues.md gives the definitions.
#ifndef W4JIT_RUNTIME_EPILOGUE_REF_H_
#define W4JIT_RUNTIME_EPILOGUE_REF_H_

#include <cstdint>

#include "w4jit/types.hpp"

namespace w4jit::internal {

// activation(t) in f32 (kNone: t; kSwigluOai, a pair function: t).
float ActivationRef(Activation a, float t);

// gpt-oss's gate of gate value g and up value u (Activation::kSwigluOai):
// min(g, limit) * sigmoid(alpha * min(g, limit)) * (clamp(u, +-limit) + 1),
// multiplied in that order.
float SwigluOaiRef(float g, float u, float alpha, float limit);

// The epilogue of one output element: `t` is the layer's f32 result of
// column j (gate column j with silu_mul) and `up` that of column N/2 + j
// (silu_mul only); `operands[i]` is operand i of this element widened to
// f32. Returns the value stored (before the output dtype).
float EpilogueRef(const Epilogue& e, float t, float up, const float* operands);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_EPILOGUE_REF_H_
