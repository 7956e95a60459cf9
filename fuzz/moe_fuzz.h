// The MoE draws of the layer fuzzer: a MoeLayer from the fuzzer's bytes
// (descriptor, every expert's checkpoint tensors in any format, per
// expert or as one stacked buffer) and a call with fuzzed routing (ids
// out of range, k = 0 or k > E, NaN/Inf routing weights) and x. Creation
// must succeed or return a clean error; bad routing must be refused with
// y untouched; a good call is checked against the float64 oracle
// (check/moe_check.h) wherever its inputs are finite and moderate.
#ifndef W4JIT_FUZZ_MOE_FUZZ_H_
#define W4JIT_FUZZ_MOE_FUZZ_H_

#include <fuzzer/FuzzedDataProvider.h>

namespace w4jit::fuzz {

void RunMoeOne(FuzzedDataProvider* fdp);

}  // namespace w4jit::fuzz

#endif  // W4JIT_FUZZ_MOE_FUZZ_H_
