#include "jit/da8w4_amx_generator.h"

#include <array>
#include <cstdint>

#include "jit/amx_tile_step.h"
#include "jit/emit_util.h"

namespace w4jit::internal {
namespace {

// Bytes between decoded quads (a quad's low-nibble vector, then its
// high-nibble one): the B tiles' row stride.
constexpr int kDecodedQuadBytes = 128;
// Groups of up to this many K steps are unrolled, so that the previous
// group's end can run in parts between them (longer ones, per channel,
// loop).
constexpr int64_t kMaxUnrolledSteps = 8;

Xbyak::Tmm Tile(int i) { return Xbyak::Tmm(i); }

// GPR roles beside the AVX-512 kernel's (jit/da8w4_gemm_generator.h):
// the A and B tiles' row strides in the K loop (rcx and rdx are free
// there), and the stack rows' stride while the accumulators are stored.
// The group end, which runs between the K steps, uses none of them: it
// reads the scales, zeros, sums and sa cursors and vector registers only.
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
  // (EmitTileGroup); the last group's tiles are stored and it ends after
  // the loop, its pointers one group back where the loop moved them on.
  const int64_t last = cfg_.layout.groups() > 1 ? -1 : 0;
  EmitKernel([&] { ldtilecfg(ptr[rip + tile_config]); },
             [&] {
               EmitStepStart();
               EmitGroups([&] { EmitTileGroup(); });
               EmitStoreTiles();
               EmitTileGroupEnd(last, 0, cfg_.mr, /*load_params=*/true);
               EmitEpilogue();
               EmitStepEnd();
             },
             [&] { tilerelease(); });
  align(64);
  L(tile_config);
  for (const uint8_t byte : amx_.TileConfig()) db(byte);
}

// One group, software-pipelined. Its first K step stores each of the
// previous group's accumulators to the stack and zeroes it just before its
// first product here: tile registers are not renamed, so storing all four,
// then zeroing them, made the tile unit wait for the last product's chain
// and for the 4 KiB of stores before this group's first product. The
// previous group's vector end then runs in parts (row ranges) behind this
// group's K steps, which the out-of-order core runs beside them. Every
// part reads its stack rows before the next group's first step overwrites
// them, and per (row, half) the groups still enter the f32 tile in order,
// so the arithmetic is the AVX-512 kernel's.
void Da8w4AmxGenerator::EmitTileGroup() {
  // With one group (per channel) there is no previous group at all.
  const bool has_prev = cfg_.layout.groups() > 1;
  mov(kAStride, qa_stride_);
  mov(kBStride32, kDecodedQuadBytes);
  if (has_prev) mov(kRowStride32, 2 * vec_.bytes());
  const bool unrolled = amx_.k_steps <= kMaxUnrolledSteps;
  // Parts of the previous group's end: one behind each unrolled step, else
  // all of it behind the first step.
  const int64_t parts = unrolled ? amx_.k_steps : 1;
  bool params_loaded = false;
  auto group_end_part = [&](int64_t part) {
    const GroupEndRows rows = GroupEndPart(cfg_.mr, part, parts);
    if (!has_prev || rows.begin == rows.end) return;
    // Not in the first group: there is no previous group yet (every part
    // takes the same branch, so the scales its first part loads into
    // vector registers hold for the rest: the K steps use none).
    Xbyak::Label first;
    cmp(kGroupsLeft, cfg_.layout.groups());
    je(first, T_NEAR);
    EmitTileGroupEnd(-1, rows.begin, rows.end,
                     /*load_params=*/!params_loaded);
    L(first);
    params_loaded = true;
  };
  // In the first group the stores write rows that nothing reads.
  EmitKStep(0, has_prev ? Drain::kStoreAndZero : Drain::kZero);
  const int64_t w_step = amx_.k_step / 4 * kDecodedQuadBytes;
  if (unrolled) {
    group_end_part(0);
    for (int64_t s = 1; s < amx_.k_steps; ++s) {
      EmitKStep(s, Drain::kNone);
      group_end_part(s);
    }
    add(kQa, static_cast<uint32_t>(amx_.k_steps * amx_.k_step));
    add(kW, static_cast<uint32_t>(amx_.k_steps * w_step));
    return;
  }
  add(kQa, amx_.k_step);
  add(kW, static_cast<uint32_t>(w_step));
  group_end_part(0);
  Xbyak::Label loop;
  mov(kChunksLeft, amx_.k_steps - 1);
  L(loop);
  EmitKStep(0, Drain::kNone);
  add(kQa, amx_.k_step);
  add(kW, static_cast<uint32_t>(w_step));
  dec(kChunksLeft);
  jnz(loop, T_NEAR);
}

// K step s (from the cursors) of C[rt][half] += A[rt] x B[half], in the
// order of jit/amx_tile_step.h. With a drain each accumulator is first
// stored (kStoreAndZero) and zeroed, just before its first product.
void Da8w4AmxGenerator::EmitKStep(int64_t s, Drain drain) {
  const int rts = amx_.row_tiles;
  auto load_a = [&](int rt) {
    tileloadd(Tile(Da8w4AmxPlan::kA + rt),
              ptr[kQa + kAStride + (rt * 16 * qa_stride_ + s * amx_.k_step)]);
  };
  auto load_b = [&](int half) {
    tileloadd(Tile(Da8w4AmxPlan::kB + half),
              ptr[kW + kBStride +
                  (half * cfg_.layout.quad_bytes() +
                   s * (amx_.k_step / 4 * kDecodedQuadBytes))]);
  };
  auto dot = [&](int rt, int half) {
    const Xbyak::Tmm c = Tile(Da8w4AmxPlan::kC + 2 * rt + half),
                     a = Tile(Da8w4AmxPlan::kA + rt),
                     b = Tile(Da8w4AmxPlan::kB + half);
    if (drain == Drain::kStoreAndZero) {
      tilestored(ptr[rsp + kRowStride + I32Tile(AccIndex(16 * rt, 0, half))],
                 c);
    }
    if (drain != Drain::kNone) tilezero(c);
    if (zero_point_in_weights_) {
      tdpbssd(c, a, b);
    } else {
      tdpbsud(c, a, b);
    }
  };
  EmitTileStepOrder(rts, drain != Drain::kNone, load_a, load_b, dot);
}

// The last group's int32 rows go to the stack where the AVX-512 kernel
// keeps its int32 tile (row r, half h at I32Tile(Acc(r, 0, h)), 128 bytes
// per row), as each group's first K step stores the previous group's.
void Da8w4AmxGenerator::EmitStoreTiles() {
  mov(kRowStride32, 2 * vec_.bytes());
  for (int rt = 0; rt < amx_.row_tiles; ++rt) {
    for (int half = 0; half < 2; ++half) {
      tilestored(ptr[rsp + kRowStride + I32Tile(AccIndex(16 * rt, 0, half))],
                 Tile(Da8w4AmxPlan::kC + 2 * rt + half));
    }
  }
}

// The AVX-512 kernel's group-end code on stored rows [r0, r1) (both
// halves), for the group `group` (0 or -1) away from where the cursors
// point; the group's scales (and zero points) are loaded once for all rows
// (load_params), into registers that its later parts read.
void Da8w4AmxGenerator::EmitTileGroupEnd(int64_t group, int r0, int r1,
                                         bool load_params) {
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
  for (int half = 0; half < 2 && load_params; ++half) {
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
  for (int r = r0; r < r1; ++r) {
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
