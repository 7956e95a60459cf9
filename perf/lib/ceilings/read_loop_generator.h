// A JIT loop that streams through a buffer with full-width vector loads and
// nothing else: the read bandwidth a GEMV over packed weights can hope for.
// The range is read as several concurrent sequential streams (its equal
// parts, advanced together), as a kernel reading several column blocks
// does: one stream alone leaves the hardware prefetchers idle much of the
// time on Zen 3 and reads L3 and DRAM measurably slower than the kernels.
#ifndef W4JIT_PERF_LIB_CEILINGS_READ_LOOP_GENERATOR_H_
#define W4JIT_PERF_LIB_CEILINGS_READ_LOOP_GENERATOR_H_

#include <cstdint>

#include "jit/generator.h"

namespace w4jit::perf {

class ReadLoopGenerator : public internal::Generator {
 public:
  // The range read is [begin, begin + blocks * block_bytes()), as
  // `streams` parts of blocks * block_bytes() / streams bytes each.
  struct Args {
    const uint8_t* begin;  // aligned to vector_bytes
    int64_t blocks;        // > 0; a block is kLoadsPerBlock vectors
    int64_t passes;        // > 0; times the whole range is read
  };
  using Fn = void (*)(const Args*);

  static constexpr int kLoadsPerBlock = 8;

  // vector_bytes: 32 (ymm, AVX2) or 64 (zmm, AVX-512); streams: 1, 2, 4
  // or 8.
  explicit ReadLoopGenerator(int vector_bytes, int streams = 4);
  int64_t block_bytes() const {
    return int64_t{kLoadsPerBlock} * vector_bytes_;
  }

 protected:
  void Generate() override;

 private:
  int vector_bytes_;
  int streams_;
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CEILINGS_READ_LOOP_GENERATOR_H_
