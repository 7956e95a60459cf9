// The DA8W4 kernel on Intel AMX tiles: the AVX-512 kernel's arithmetic
// (jit/da8w4_gemm_generator.h) with its integer dot products done by
// tdpbsud (signed qa rows x unsigned nibbles u, int32 accumulation) on up
// to 32 rows x one decoded block of 32 columns per step. The tile plan and
// the per-group design are in jit/da8w4_amx_plan.h: K steps within a
// group, the four accumulator tiles stored at each group end and turned
// into the f32 tile by the AVX-512 kernel's own group-end code, whose
// epilogue (bias, activations, binary post-ops, f32 / bf16 stores, N
// tails) then runs unchanged. Outputs are bit-identical to the AVX-512
// kernel's.
//
// The group end is software-pipelined: the next group's first K step
// stores each accumulator (tilestored) and zeroes it just before its first
// product there, and the vector group end runs in parts behind the next
// group's K steps. Tile registers are not renamed: storing all four tiles,
// then zeroing them, made the next group's first product wait for the last
// product's chain and for the 4 KiB of stores (the W4A16 tile kernel
// measured the same: jit/w4a16_amx_generator.h).
//
// Every call loads the tile configuration (ldtilecfg) and releases the
// tiles (tilerelease) before it returns, so each pool thread configures
// its own tiles and none leaves a kernel holding tile state. The process
// must hold the tile data permission (dispatch/amx_permission.h) before a
// kernel runs; generating one needs no AMX.
#ifndef W4JIT_JIT_DA8W4_AMX_GENERATOR_H_
#define W4JIT_JIT_DA8W4_AMX_GENERATOR_H_

#include <cstdint>

#include "jit/da8w4_amx_plan.h"
#include "jit/da8w4_gemm_generator.h"

namespace w4jit::internal {

// config.amx must be set and CheckDa8w4GemmConfig(config) OK.
class Da8w4AmxGenerator : public Da8w4GemmGenerator {
 public:
  explicit Da8w4AmxGenerator(const Da8w4GemmConfig& config);

 protected:
  void Generate() override;

 private:
  // What a K step does to each accumulator before its first product: the
  // first step of a group drains the previous group's.
  enum class Drain { kNone, kZero, kStoreAndZero };
  // One group (the pipeline is described at the definitions).
  void EmitTileGroup();
  void EmitKStep(int64_t s, Drain drain);
  void EmitStoreTiles();
  // Rows [r0, r1) of the group end of the group `group` (0 or -1) away
  // from the cursors; load_params in its first part.
  void EmitTileGroupEnd(int64_t group, int r0, int r1, bool load_params);

  const Da8w4AmxPlan amx_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_DA8W4_AMX_GENERATOR_H_
