#include "perf/lib/ceilings/peak_loop_generator.h"

#include <cstddef>

namespace w4jit::perf {
namespace {

// A tile's rows and bytes per row at their largest (palette 1).
constexpr int kTileRows = 16;
constexpr int kTileRowBytes = 64;
// C tiles 0-3, A tiles 4-5, B tiles 6-7.
constexpr int kTileChains = 4;
// One tile dot product: 16x16 C elements, each a dot of K = 32 bf16 or
// 64 int8 pairs (a 64-byte row of A with a column of B).
constexpr int kBf16TileMacs = kTileRows * kTileRows * 32;
constexpr int kInt8TileMacs = kTileRows * kTileRows * 64;

// AVX2 has 16 vector registers: 12 chains plus sources, constants and a
// temporary. AVX-512 has 32: 24 chains plus two sources.
constexpr PeakOpInfo kInfos[] = {
    {PeakOp::kInt8DotAvx2, "int8_avx2",
     "int8 dot, AVX2 emulation vpmaddubsw+vpmaddwd+vpaddd ymm", 12, 32},
    {PeakOp::kInt8DotVnniZmm, "int8_vnni_zmm", "int8 dot, vpdpbusd zmm", 24,
     64},
    {PeakOp::kBf16DotZmm, "bf16_dot_zmm", "bf16 dot, vdpbf16ps zmm", 24, 32},
    {PeakOp::kF32FmaYmm, "f32_fma_ymm", "f32 FMA, vfmadd231ps ymm", 12, 8},
    {PeakOp::kF32FmaZmm, "f32_fma_zmm", "f32 FMA, vfmadd231ps zmm", 24, 16},
    {PeakOp::kInt8DotAvx2I16, "int8_avx2_i16",
     "int8 dot into int16, vpmaddubsw+vpaddw ymm (AVX2 DA8W4 inner loop)", 12,
     32},
    // Four 16x16 C tiles from two A and two B tiles: every C tile is its own
    // chain and the 8 tile registers are used up.
    {PeakOp::kAmxBf16, "amx_bf16", "bf16 tile dot, AMX tdpbf16ps 16x16x32",
     kTileChains, kBf16TileMacs},
    {PeakOp::kAmxInt8, "amx_int8", "int8 tile dot, AMX tdpbssd 16x16x64",
     kTileChains, kInt8TileMacs},
};

bool IsZmm(PeakOp op) {
  return op == PeakOp::kInt8DotVnniZmm || op == PeakOp::kBf16DotZmm ||
         op == PeakOp::kF32FmaZmm;
}

}  // namespace

bool IsTileOp(PeakOp op) {
  return op == PeakOp::kAmxBf16 || op == PeakOp::kAmxInt8;
}

const PeakOpInfo& GetPeakOpInfo(PeakOp op) {
  return kInfos[static_cast<int>(op)];
}

std::vector<PeakOp> AllPeakOps() {
  std::vector<PeakOp> ops;
  for (const PeakOpInfo& info : kInfos) ops.push_back(info.op);
  return ops;
}

std::string MissingFeatureFor(PeakOp op, const internal::CpuFeatures& cpu) {
  switch (op) {
    case PeakOp::kInt8DotAvx2:
    case PeakOp::kInt8DotAvx2I16:
      return cpu.avx2 ? "" : "AVX2";
    case PeakOp::kF32FmaYmm:
      return !cpu.avx2 ? "AVX2" : (!cpu.fma ? "FMA" : "");
    case PeakOp::kF32FmaZmm:
      return cpu.avx512f ? "" : "AVX512F";
    case PeakOp::kInt8DotVnniZmm:
      return !cpu.avx512vnni ? "AVX512_VNNI"
                             : (!cpu.avx512bw ? "AVX512BW" : "");
    case PeakOp::kBf16DotZmm:
      return !cpu.avx512bf16 ? "AVX512_BF16"
                             : (!cpu.avx512bw ? "AVX512BW" : "");
    case PeakOp::kAmxBf16:
      return !cpu.amx_tile ? "AMX_TILE" : (!cpu.amx_bf16 ? "AMX_BF16" : "");
    case PeakOp::kAmxInt8:
      return !cpu.amx_tile ? "AMX_TILE" : (!cpu.amx_int8 ? "AMX_INT8" : "");
  }
  return "?";
}

PeakLoopGenerator::PeakLoopGenerator(PeakOp op)
    : Generator(std::string("peak_") + GetPeakOpInfo(op).key), op_(op) {}

int64_t PeakLoopGenerator::MacsPerIteration() const {
  const PeakOpInfo& info = GetPeakOpInfo(op_);
  return int64_t{kUnroll} * info.chains * info.macs_per_step;
}

void PeakLoopGenerator::EmitStep(int chain) {
  const int chains = GetPeakOpInfo(op_).chains;
  if (IsZmm(op_)) {
    const Xbyak::Zmm acc(chain), a(chains), b(chains + 1);
    if (op_ == PeakOp::kInt8DotVnniZmm) {
      vpdpbusd(acc, a, b, Xbyak::EvexEncoding);
    } else if (op_ == PeakOp::kBf16DotZmm) {
      vdpbf16ps(acc, a, b);
    } else {
      vfmadd231ps(acc, a, b);
    }
    return;
  }
  const Xbyak::Ymm acc(chain), a(12), b(13);
  if (op_ == PeakOp::kF32FmaYmm) {
    vfmadd231ps(acc, a, b);
    return;
  }
  // One temporary serves every chain: register renaming removes the false
  // dependency, and only the add is on the loop-carried chain, exactly as
  // in a kernel that reuses one register for the products.
  const Xbyak::Ymm ones(14), tmp(15);
  vpmaddubsw(tmp, a, b);
  if (op_ == PeakOp::kInt8DotAvx2I16) {
    vpaddw(acc, acc, tmp);
    return;
  }
  vpmaddwd(tmp, tmp, ones);
  vpaddd(acc, acc, tmp);
}

// Loads the tile shapes, zeroes every tile, runs the four C tiles' chains
// and releases the tiles, so the thread returns to the init state and its
// context switches save no tile data.
void PeakLoopGenerator::GenerateTileLoop() {
  Xbyak::Label config;
  Preamble();
  ldtilecfg(ptr[rip + config]);
  for (int t = 0; t < 8; ++t) tilezero(Xbyak::Tmm(t));
  const Xbyak::Reg64 args(kArg1), count = rax;
  mov(count, ptr[args + offsetof(Args, iterations)]);
  Xbyak::Label loop;
  L(loop);
  for (int u = 0; u < kUnroll; ++u) {
    for (int c = 0; c < kTileChains; ++c) {
      const Xbyak::Tmm acc(c), a(4 + c / 2), b(6 + c % 2);
      if (op_ == PeakOp::kAmxBf16) {
        tdpbf16ps(acc, a, b);
      } else {
        tdpbssd(acc, a, b);
      }
    }
  }
  dec(count);
  jnz(loop, T_NEAR);
  tilerelease();
  Postamble();
  // The 64-byte tile configuration (palette 1): every tile 16 rows of 64
  // bytes, read by ldtilecfg from the code pages.
  align(64);
  L(config);
  uint8_t bytes[64] = {};
  bytes[0] = 1;  // palette
  for (int t = 0; t < 8; ++t) {
    bytes[16 + 2 * t] = kTileRowBytes;  // colsb[t], little-endian u16
    bytes[48 + t] = kTileRows;          // rows[t]
  }
  for (uint8_t b : bytes) db(b);
}

void PeakLoopGenerator::Generate() {
  if (IsTileOp(op_)) {
    GenerateTileLoop();
    return;
  }
  Preamble();
  const int regs = IsZmm(op_) ? GetPeakOpInfo(op_).chains + 2 : 16;
  // All-zero operands: the instructions' speed does not depend on values
  // and zeros cannot produce denormals.
  for (int r = 0; r < regs; ++r) {
    if (IsZmm(op_)) {
      vpxord(Xbyak::Zmm(r), Xbyak::Zmm(r), Xbyak::Zmm(r));
    } else {
      vpxor(Xbyak::Ymm(r), Xbyak::Ymm(r), Xbyak::Ymm(r));
    }
  }
  const Xbyak::Reg64 args(kArg1), count = rax;
  mov(count, ptr[args + offsetof(Args, iterations)]);
  Xbyak::Label loop;
  L(loop);
  for (int u = 0; u < kUnroll; ++u) {
    for (int c = 0; c < GetPeakOpInfo(op_).chains; ++c) EmitStep(c);
  }
  dec(count);
  jnz(loop, T_NEAR);
  Postamble();
}

}  // namespace w4jit::perf
