// The fused epilogue (w4jit::Epilogue) as vector code, shared by every
// generator's store path: activation (or the silu_mul pair), then the
// binary post-ops with operands read from memory, all in f32 on the value
// about to be converted and stored. One implementation of the vector
// exp / sigmoid / gelu forms for both widths (ymm AVX2, zmm AVX-512);
// their definitions and measured accuracy are in docs/epilogues.md.
//
// Register use: the value, the up value (silu_mul), kTemps temporaries
// given by the caller; on AVX-512 the opmask registers k6 and k7 (as
// VecEmitter). Constants come from the generator's ConstPool. Apply writes
// no GPR; EmitTileStores moves the row pointers it is given.
#ifndef W4JIT_JIT_EPILOGUE_EMIT_H_
#define W4JIT_JIT_EPILOGUE_EMIT_H_

#include <array>
#include <cstdint>
#include <functional>

#include "jit/emit_util.h"
#include "w4jit/types.hpp"
#include "xbyak/xbyak.h"

namespace w4jit::internal {

class EpilogueEmitter {
 public:
  static constexpr int kTemps = 4;
  using Temps = std::array<Xbyak::Xmm, kTemps>;

  EpilogueEmitter(Xbyak::CodeGenerator* g, const VecEmitter& vec,
                  ConstPool* pool, const Epilogue& epilogue)
      : g_(g), vec_(vec), pool_(pool), e_(epilogue) {}

  const Epilogue& epilogue() const { return e_; }
  bool active() const { return !e_.empty(); }
  // Bytes of one element of operand i.
  int OperandSize(int i) const {
    return e_.binary[i].dtype == DType::kF32 ? 4 : 2;
  }

  // v holds t for output lanes [0, count) (count in [1, lanes]); with
  // silu_mul `up` holds the up half of the same columns (else nullptr).
  // On return v holds the epilogue's result. operands[i] (i < num_binary)
  // points at operand i of this output row, at output column `col` minus
  // nothing: the lanes read are operands[i] + (col + lane) * size, lanes
  // past `count` are never read. v, up and the temporaries are clobbered.
  void Apply(const Xbyak::Xmm& v, const Xbyak::Xmm* up,
             const Xbyak::Reg64* operands, int64_t col, int count,
             const Temps& t) const;

  // The store loop of a register tile under the epilogue, shared by the
  // W4A16 generators. Output vector o (o in [0, out_vectors)) covers
  // columns (first_vector + o) * lanes + [0, lanes) from y, of which those
  // below out_cols exist. For each of `rows` rows and each output vector
  // with columns: value(dst, row, v) puts the f32 value (bias added) of
  // tile vector v in dst, v = o, or with silu_mul the pair v = 2o (gate),
  // 2o + 1 (up); the epilogue is applied and the existing columns stored
  // as out_dtype. operands[i] point at the row's operand i at y's column.
  // Between rows, y moves on by the 64-bit stride stored at ldy_at and
  // operands[i] by the one at ep_ld_at + 8 i (the kernels' argument
  // structs). Uses vector registers 0 .. 5 and gpr_tmp.
  struct TileStores {
    int rows = 0;
    int out_vectors = 0;
    int first_vector = 0;
    int64_t out_cols = 0;
    std::function<void(const Xbyak::Xmm& dst, int row, int v)> value;
    Xbyak::Reg64 y;
    Xbyak::RegExp ldy_at;
    Xbyak::RegExp ep_ld_at;
    const Xbyak::Reg64* operands = nullptr;
    DType out_dtype = DType::kF32;
    Xbyak::Reg32 gpr_tmp;
  };
  void EmitTileStores(const TileStores& s) const;

  // v = activation(v) (uses up to all four temporaries).
  void EmitActivation(w4jit::Activation a, const Xbyak::Xmm& v,
                      const Temps& t) const;

  // dst = lanes [0, count) of an f32 or bf16 vector at src widened to
  // f32 (lanes past count are zero); reads nothing past count.
  void LoadF32(const Xbyak::Xmm& dst, const Xbyak::RegExp& src, DType dtype,
               int count) const;

 private:
  // x = exp(x) for x <= 0 (NaN stays NaN; x < -88 gives 0).
  void Exp(const Xbyak::Xmm& x, const Xbyak::Xmm& ta,
           const Xbyak::Xmm& tb) const;
  // out = sigmoid(in); in is kept; out, ta, tb distinct from in.
  void Sigmoid(const Xbyak::Xmm& out, const Xbyak::Xmm& in,
               const Xbyak::Xmm& ta, const Xbyak::Xmm& tb) const;
  // dst = (sign bit of sel set) ? if_neg : dst.
  void SelectNegative(const Xbyak::Xmm& dst, const Xbyak::Xmm& if_neg,
                      const Xbyak::Xmm& sel) const;
  Xbyak::Address F(float v) const;

  Xbyak::CodeGenerator* g_;
  const VecEmitter& vec_;
  ConstPool* pool_;
  Epilogue e_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_EPILOGUE_EMIT_H_
