// A JIT loop that keeps one arithmetic instruction's ports busy: many
// independent accumulator chains in registers, no memory traffic. Written
// with Xbyak rather than intrinsics because compilers spill or reorder such
// loops, and the point is to run exactly the instruction the kernels use.
#ifndef W4JIT_PERF_LIB_CEILINGS_PEAK_LOOP_GENERATOR_H_
#define W4JIT_PERF_LIB_CEILINGS_PEAK_LOOP_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "jit/generator.h"

namespace w4jit::perf {

enum class PeakOp : int {
  // vpmaddubsw + vpmaddwd + vpaddd on ymm: the exact int8 dot product into
  // int32 that emulates VNNI on AVX2; the AVX2 int8 MAC peak.
  kInt8DotAvx2 = 0,
  kInt8DotVnniZmm = 1,  // vpdpbusd zmm
  kBf16DotZmm = 2,      // vdpbf16ps zmm
  kF32FmaYmm = 3,       // vfmadd231ps ymm
  kF32FmaZmm = 4,       // vfmadd231ps zmm
  // vpmaddubsw + vpaddw on ymm: the inner loop the AVX2 DA8W4 kernels run
  // (4-bit weights keep int16 partial sums exact for a few k-quads; the
  // widening vpmaddwd + vpaddd is paid once per chunk, not per step).
  kInt8DotAvx2I16 = 5,
  // AMX tile dot products, 16x16 accumulator tiles (C += A * B): what
  // oneDNN's brgemm kernels run on CPUs with AMX. w4jit's kernels do not;
  // the bench judges such peers against these peaks, not the AVX-512 ones.
  kAmxBf16 = 6,  // tdpbf16ps: K = 32 bf16 per row pair, f32 accumulators
  kAmxInt8 = 7,  // tdpbssd: K = 64 int8 per row pair, int32 accumulators
};

struct PeakOpInfo {
  PeakOp op;
  const char* key;          // stable id in CSV/JSON: "int8_avx2", ...
  const char* description;  // for people
  int chains;               // independent accumulators (registers, tiles)
  int macs_per_step;        // multiply-accumulates of one chain step
};

// True for the AMX ops: they need the tile permission
// (dispatch/amx_permission.h) before they run.
bool IsTileOp(PeakOp op);

const PeakOpInfo& GetPeakOpInfo(PeakOp op);
std::vector<PeakOp> AllPeakOps();

// Empty if `cpu` can run `op`, else the missing feature, e.g. "AVX512_BF16".
std::string MissingFeatureFor(PeakOp op, const internal::CpuFeatures& cpu);

class PeakLoopGenerator : public internal::Generator {
 public:
  // The kernel's only argument.
  struct Args {
    int64_t iterations;  // > 0
  };
  using Fn = void (*)(const Args*);

  // Chain steps per iteration (each chain advances this many times).
  static constexpr int kUnroll = 4;

  explicit PeakLoopGenerator(PeakOp op);
  // Multiply-accumulates one iteration performs.
  int64_t MacsPerIteration() const;

 protected:
  void Generate() override;

 private:
  void EmitStep(int chain);
  void GenerateTileLoop();
  PeakOp op_;
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_CEILINGS_PEAK_LOOP_GENERATOR_H_
