#include "jit/da8w4_amx_generator.h"

#include <array>
#include <cstdint>

namespace w4jit::internal {
namespace {

// Bytes between decoded quads (a quad's low-nibble vector, then its
// high-nibble one): the B tiles' row stride.
constexpr int kDecodedQuadBytes = 128;

Xbyak::Tmm Tile(int i) { return Xbyak::Tmm(i); }

}  // namespace

Da8w4AmxGenerator::Da8w4AmxGenerator(const Da8w4GemmConfig& config)
    // Checked (CheckDa8w4GemmConfig) before a generator is made.
    : Da8w4GemmGenerator(config, MakeDa8w4AmxPlan(config.mr, config.nblk,
                                                  config.decoded, config.layout)
                                     ->vec),
      amx_(*MakeDa8w4AmxPlan(config.mr, config.nblk, config.decoded,
                             config.layout)) {}

// GPRs as the AVX-512 kernel's; rcx and rdx hold the A and B tile strides
// in the K loop, rax the stack rows' stride at a group end.
void Da8w4AmxGenerator::Generate() {
  Xbyak::Label tile_config;
  EmitKernel([&] { ldtilecfg(ptr[rip + tile_config]); },
             [&] {
               EmitStepStart();
               EmitGroups([&] { EmitTileGroup(); });
               EmitEpilogue();
               EmitStepEnd();
             },
             [&] { tilerelease(); });
  align(64);
  L(tile_config);
  for (const uint8_t byte : amx_.TileConfig()) db(byte);
}

void Da8w4AmxGenerator::EmitTileGroup() {
  const int rts = amx_.row_tiles;
  for (int t = 0; t < 2 * rts; ++t) tilezero(Tile(Da8w4AmxPlan::kC + t));
  mov(rcx, qa_stride_);
  mov(edx, kDecodedQuadBytes);
  auto k_step = [&] {
    for (int rt = 0; rt < rts; ++rt) {
      tileloadd(Tile(Da8w4AmxPlan::kA + rt),
                ptr[kQa + rcx + rt * 16 * qa_stride_]);
    }
    for (int half = 0; half < 2; ++half) {
      tileloadd(Tile(Da8w4AmxPlan::kB + half),
                ptr[kW + rdx + half * cfg_.layout.quad_bytes()]);
    }
    for (int rt = 0; rt < rts; ++rt) {
      for (int half = 0; half < 2; ++half) {
        tdpbsud(Tile(Da8w4AmxPlan::kC + 2 * rt + half),
                Tile(Da8w4AmxPlan::kA + rt), Tile(Da8w4AmxPlan::kB + half));
      }
    }
    add(kQa, amx_.k_step);
    add(kW, amx_.k_step / 4 * kDecodedQuadBytes);
  };
  if (amx_.k_steps == 1) {
    k_step();
  } else {
    Xbyak::Label loop;
    mov(kChunksLeft, amx_.k_steps);
    L(loop);
    k_step();
    dec(kChunksLeft);
    jnz(loop, T_NEAR);
  }
  EmitTileGroupEnd();
}

// The int32 rows go to the stack where the AVX-512 kernel keeps its int32
// tile (row r, half h at I32Tile(Acc(r, 0, h)), 128 bytes per row), then
// its group-end code runs on each.
void Da8w4AmxGenerator::EmitTileGroupEnd() {
  mov(eax, 2 * vec_.bytes());
  for (int rt = 0; rt < amx_.row_tiles; ++rt) {
    for (int half = 0; half < 2; ++half) {
      tilestored(ptr[rsp + rax + I32Tile(AccIndex(16 * rt, 0, half))],
                 Tile(Da8w4AmxPlan::kC + 2 * rt + half));
    }
  }
  const Xbyak::Zmm acc(0), row_sum(amx_.vec.row_sum), tmp(amx_.vec.tmp);
  for (int r = 0; r < cfg_.mr; ++r) {
    LoadRowSum(r, row_sum);
    const Xbyak::Address row_sa = ptr_b[rsi + r * sums_stride_];
    for (int half = 0; half < 2; ++half) {
      vmovdqa32(acc, ptr[rsp + I32Tile(AccIndex(r, 0, half))]);
      EmitGroupEndOne(r, 0, half, acc, row_sum, tmp, row_sa);
    }
  }
}

}  // namespace w4jit::internal
