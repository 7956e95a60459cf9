// The MoE draws of the layer fuzzer: a MoeLayer from the fuzzer's bytes
// (descriptor, every expert's checkpoint tensors in any format, per
// expert or as one stacked buffer) and a call with fuzzed routing (ids
// out of range, k = 0 or k > E, NaN/Inf routing weights) and x (raw
// bytes, or moderate values with NaN / Inf at random places), under
// either NonFinitePolicy (the desc's, or one per call). Creation must
// succeed or return a clean error. Under kError bad input must be refused
// with y untouched; under kPropagate every token with bad input must get
// an all-NaN row and nothing outside y[i, 0..H) (padding, guard bytes
// around y) may be written. The tokens without bad input are checked
// against the float64 oracle (check/moe_check.h) wherever their inputs
// are moderate.
#ifndef W4JIT_FUZZ_MOE_FUZZ_H_
#define W4JIT_FUZZ_MOE_FUZZ_H_

#include <fuzzer/FuzzedDataProvider.h>

namespace w4jit::fuzz {

void RunMoeOne(FuzzedDataProvider* fdp);

}  // namespace w4jit::fuzz

#endif  // W4JIT_FUZZ_MOE_FUZZ_H_
