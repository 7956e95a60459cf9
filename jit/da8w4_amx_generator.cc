#include "jit/da8w4_amx_generator.h"

#include <array>
#include <cstdint>

#include "jit/emit_util.h"

namespace w4jit::internal {
namespace {

// Bytes between decoded quads (a quad's low-nibble vector, then its
// high-nibble one): the B tiles' row stride.
constexpr int kDecodedQuadBytes = 128;

Xbyak::Tmm Tile(int i) { return Xbyak::Tmm(i); }

// GPR roles beside the AVX-512 kernel's (jit/da8w4_gemm_generator.h):
// the A and B tiles' row strides in the K loop (rcx and rdx are free
// there), and the stack rows' stride while the accumulators are stored.
constexpr Xbyak::Reg64 kAStride(Xbyak::Operand::RCX);
constexpr Xbyak::Reg64 kBStride(Xbyak::Operand::RDX);
constexpr Xbyak::Reg32 kBStride32(Xbyak::Operand::EDX);
constexpr Xbyak::Reg64 kRowStride(Xbyak::Operand::RAX);
constexpr Xbyak::Reg32 kRowStride32(Xbyak::Operand::EAX);

}  // namespace

Da8w4AmxGenerator::Da8w4AmxGenerator(const Da8w4GemmConfig& config)
    // Checked (CheckDa8w4GemmConfig) before a generator is made.
    : Da8w4GemmGenerator(config, MakeDa8w4AmxPlan(config.mr, config.nblk,
                                                  config.decoded, config.layout)
                                     ->vec),
      amx_(*MakeDa8w4AmxPlan(config.mr, config.nblk, config.decoded,
                             config.layout)) {
  // s4: the panel holds q = u - 8 (runtime/da8w4: the minus8 decoder), so
  // tdpbssd gives sum qa * q = acc - 8 * sum qa exactly: no zero-point term.
  zero_point_in_weights_ = config.weight_type == WeightType::kS4;
}

void Da8w4AmxGenerator::Generate() {
  Xbyak::Label tile_config;
  // A group's end runs while the tiles compute the next group
  // (EmitTileGroup); the last group ends after the loop, its pointers one
  // group back where the loop moved them on.
  const int64_t last = cfg_.layout.groups() > 1 ? -1 : 0;
  EmitKernel([&] { ldtilecfg(ptr[rip + tile_config]); },
             [&] {
               EmitStepStart();
               EmitGroups([&] { EmitTileGroup(); });
               EmitTileGroupEnd(last);
               EmitEpilogue();
               EmitStepEnd();
             },
             [&] { tilerelease(); });
  align(64);
  L(tile_config);
  for (const uint8_t byte : amx_.TileConfig()) db(byte);
}

// One group, software-pipelined: its tile dot products (the four
// accumulators interleaved, so that four tdpbsud chains hide each other's
// latency), then the vector group end of the previous group (which the
// out-of-order core runs beside them, from the int32 rows stored before),
// then this group's accumulators stored. Per (row, half) the groups still
// enter the f32 tile in order, so the arithmetic is the AVX-512 kernel's.
void Da8w4AmxGenerator::EmitTileGroup() {
  mov(kAStride, qa_stride_);
  mov(kBStride32, kDecodedQuadBytes);
  EmitTileDots();
  if (cfg_.layout.groups() > 1) {
    // Not in the first group: there is no previous group yet.
    Xbyak::Label first;
    cmp(kGroupsLeft, cfg_.layout.groups());
    je(first, T_NEAR);
    EmitTileGroupEnd(-1);
    L(first);
  }
  EmitStoreTiles(0);
  EmitStoreTiles(1);
}

// C[rt][half] = sum over the group's K steps of A[rt] x B[half]; the K
// cursors move on by the group.
void Da8w4AmxGenerator::EmitTileDots() {
  const int rts = amx_.row_tiles;
  for (int t = 0; t < 2 * rts; ++t) tilezero(Tile(Da8w4AmxPlan::kC + t));
  auto k_step = [&] {
    for (int rt = 0; rt < rts; ++rt) {
      tileloadd(Tile(Da8w4AmxPlan::kA + rt),
                ptr[kQa + kAStride + rt * 16 * qa_stride_]);
    }
    for (int half = 0; half < 2; ++half) {
      tileloadd(Tile(Da8w4AmxPlan::kB + half),
                ptr[kW + kBStride + half * cfg_.layout.quad_bytes()]);
    }
    for (int rt = 0; rt < rts; ++rt) {
      for (int half = 0; half < 2; ++half) {
        const Xbyak::Tmm c = Tile(Da8w4AmxPlan::kC + 2 * rt + half),
                         a = Tile(Da8w4AmxPlan::kA + rt),
                         b = Tile(Da8w4AmxPlan::kB + half);
        if (zero_point_in_weights_) {
          tdpbssd(c, a, b);
        } else {
          tdpbsud(c, a, b);
        }
      }
    }
    add(kQa, amx_.k_step);
    add(kW, amx_.k_step / 4 * kDecodedQuadBytes);
  };
  if (amx_.k_steps == 1) {
    k_step();
    return;
  }
  Xbyak::Label loop;
  mov(kChunksLeft, amx_.k_steps);
  L(loop);
  k_step();
  dec(kChunksLeft);
  jnz(loop, T_NEAR);
}

// The int32 rows of `half` go to the stack where the AVX-512 kernel keeps
// its int32 tile (row r, half h at I32Tile(Acc(r, 0, h)), 128 bytes per
// row).
void Da8w4AmxGenerator::EmitStoreTiles(int half) {
  mov(kRowStride32, 2 * vec_.bytes());
  for (int rt = 0; rt < amx_.row_tiles; ++rt) {
    tilestored(ptr[rsp + kRowStride + I32Tile(AccIndex(16 * rt, 0, half))],
               Tile(Da8w4AmxPlan::kC + 2 * rt + half));
  }
}

// The AVX-512 kernel's group-end code on each stored row (both halves), for
// the group `group` (0 or -1) away from where the cursors point; the
// group's scales (and zero points) loaded once for all rows.
void Da8w4AmxGenerator::EmitTileGroupEnd(int64_t group) {
  const Da8w4Layout& lay = cfg_.layout;
  const int64_t sums = group * 4;
  using P = Da8w4AmxPlan;
  const Xbyak::Zmm acc(P::kGroupAcc), row_sum(amx_.vec.row_sum),
      tmp(amx_.vec.tmp);
  const Xbyak::Xmm scales[2] = {Xbyak::Zmm(P::kGroupScales),
                                Xbyak::Zmm(P::kGroupScales + 1)};
  const Xbyak::Xmm zeros[2] = {Xbyak::Zmm(P::kGroupZeros),
                               Xbyak::Zmm(P::kGroupZeros + 1)};
  const bool u4 = cfg_.weight_type == WeightType::kU4;
  for (int half = 0; half < 2; ++half) {
    EmitLoadWidenedF32(this, lay.scale_dtype,
                       ptr[kScales + group * lay.group_scale_bytes() +
                           int64_t{half} * lay.lanes * lay.scale_size()],
                       scales[half]);
    if (u4) {
      vmovdqu32(
          zeros[half],
          ptr[kZeros + group * lay.block_cols() * 4 + half * vec_.bytes()]);
    }
  }
  for (int r = 0; r < cfg_.mr; ++r) {
    // u4: z * sum per column; s4 needs no sum (zero_point_in_weights_).
    if (u4) vpbroadcastd(row_sum, ptr[kSums + r * sums_stride_ + sums]);
    const Xbyak::Address row_sa = ptr_b[kSaCursor + r * sums_stride_ + sums];
    for (int half = 0; half < 2; ++half) {
      vmovdqa32(acc, ptr[rsp + I32Tile(AccIndex(r, 0, half))]);
      EmitGroupEndOne(r, 0, half, acc, row_sum, tmp, row_sa, &scales[half],
                      u4 ? &zeros[half] : nullptr);
    }
  }
}

}  // namespace w4jit::internal
