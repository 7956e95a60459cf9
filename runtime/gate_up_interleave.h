// silu_mul layers (Epilogue::silu_mul): the weights of a merged [gate | up]
// projection (N = 2H rows, gate first) reordered at creation so that one
// register tile computes a gate column and its up column together, and
// the epilogue pairs them without a second pass or scratch:
//   packed column 2 U b + l     = gate column U b + l
//   packed column 2 U b + U + l = up column H + U b + l      (l < U)
// U being the vector width in columns. Columns U b + l >= H (the last run
// when H % U != 0) are zero weights with scale 0 and bias 0.
#ifndef W4JIT_RUNTIME_GATE_UP_INTERLEAVE_H_
#define W4JIT_RUNTIME_GATE_UP_INTERLEAVE_H_

#include "runtime/canonical_weights.h"

namespace w4jit::internal {

// N' = 2 U ceil(H / U) packed columns; w.n must be even.
CanonicalWeights InterleaveGateUp(const CanonicalWeights& w, int unit);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_GATE_UP_INTERLEAVE_H_
