// Helpers shared by the libFuzzer targets: building checkpoints of every
// format from the fuzzer's bytes, and failing loudly.
#ifndef W4JIT_FUZZ_FUZZ_UTIL_H_
#define W4JIT_FUZZ_FUZZ_UTIL_H_

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

#include "w4jit/types.hpp"

namespace w4jit::fuzz {

// Prints `what` and aborts, so libFuzzer records the input as a crash.
[[noreturn]] void Fail(const std::string& what);

// Tensors of one checkpoint, sized as `format` needs them for `desc`
// (which may be invalid: then they are small and arbitrary).
struct FuzzedCheckpoint {
  std::vector<uint8_t> qweight, scales, zeros, bias;
  std::vector<int32_t> g_idx;
  WeightsView view(WeightFormat format, bool groups_major) const;
};

// Bytes of each tensor for `desc` in `format`; 0 where the shape does not
// fit the format (the library must then reject it without reading).
struct TensorBytes {
  int64_t qweight = 0, scales = 0, zeros = 0, bias = 0;
};
TensorBytes BytesFor(const LayerDesc& desc, WeightFormat format);

// Fills every tensor from the fuzzer's bytes (arbitrary contents: out of
// range nibbles and zero points, NaN/Inf/denormal scales), at least 16
// bytes each so that pointers are never null unless asked for.
FuzzedCheckpoint MakeCheckpoint(FuzzedDataProvider* fdp, const LayerDesc& desc,
                                WeightFormat format);

// The maximum of |v| over a buffer of `count` elements of dtype `t`, or
// +inf if any element is NaN or Inf.
double MaxAbs(const void* p, DType t, int64_t count);

}  // namespace w4jit::fuzz

#endif  // W4JIT_FUZZ_FUZZ_UTIL_H_
