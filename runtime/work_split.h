// How a layer's work is cut into chunks for the threads: pure functions of
// the sizes, so that every backend and thread count computes the same
// output elements in the same order (results stay bit-identical).
#ifndef W4JIT_RUNTIME_WORK_SPLIT_H_
#define W4JIT_RUNTIME_WORK_SPLIT_H_

#include <cstdint>

namespace w4jit::internal {

struct Range {
  int64_t begin;
  int64_t end;
};

// Splits [0, total) into `parts` contiguous ranges of sizes differing by at
// most `align` (all boundaries are multiples of `align`); returns range
// `part`. parts >= 1, 0 <= part < parts.
Range SplitRange(int64_t total, int parts, int part, int64_t align = 1);

// Small-M split of `blocks` column blocks (boundaries on multiples of
// `align`) over `threads` threads: one contiguous, equal share per thread,
// the caller's included, so that no chunk needs a shared counter and each
// thread streams one run of weights. Returns how many parts to run (never
// more than the aligned units, at least 1); part i is
// SplitRange(blocks, parts, i, align).
int SmallMParts(int64_t blocks, int threads, int64_t align = 1);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_WORK_SPLIT_H_
