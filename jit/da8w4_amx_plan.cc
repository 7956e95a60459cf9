#include "jit/da8w4_amx_plan.h"

#include "absl/strings/str_cat.h"
#include "jit/amx_tile_config.h"

namespace w4jit::internal {

std::array<uint8_t, 64> Da8w4AmxPlan::TileConfig() const {
  AmxTileConfig cfg;
  for (int rt = 0; rt < row_tiles; ++rt) {
    for (int half = 0; half < 2; ++half)
      cfg.Set(kC + 2 * rt + half, Rows(rt), 64);
    cfg.Set(kA + rt, Rows(rt), k_step);
  }
  for (int half = 0; half < 2; ++half) cfg.Set(kB + half, k_step / 4, 64);
  return cfg.bytes();
}

absl::StatusOr<Da8w4AmxPlan> MakeDa8w4AmxPlan(int mr, int nblk, bool decoded,
                                              const Da8w4Layout& layout) {
  if (mr < 1 || mr > kDa8w4AmxMaxRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AMX tile of ", mr, " rows not in [1, ", kDa8w4AmxMaxRows, "]"));
  }
  if (nblk != 1 || !decoded) {
    return absl::InvalidArgumentError(
        absl::StrCat("AMX tiles read one decoded block per step, not ", nblk,
                     decoded ? " decoded" : " packed", " block(s)"));
  }
  if (layout.lanes != 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AMX tiles need the 16-lane layout, not ", layout.lanes, " lanes"));
  }
  // K bytes of one group (per channel: the padded K).
  const int64_t group_k = 4 * layout.group_quads();
  Da8w4AmxPlan p;
  p.k_step = group_k % 64 == 0 ? 64 : group_k % 32 == 0 ? 32 : 0;
  if (p.k_step == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AMX tiles step K by 32 or 64 within a group: ",
                     layout.groups() == 1 ? "K " : "group ", group_k,
                     " is not a multiple of 32"));
  }
  p.mr = mr;
  p.row_tiles = mr > 16 ? 2 : 1;
  p.k_steps = group_k / p.k_step;
  p.vec.mr = mr;
  p.vec.nblk = 1;
  p.vec.decoded = true;
  p.vec.nacc = 2 * mr;
  p.vec.zero = 0;  // the accumulators are tiles: register 0 is free
  p.vec.row_sum = 1;
  p.vec.tmp = 2;
  p.vec.used = 7;  // the epilogue's registers 0-6
  p.vec.max_chunk_quads = 1;
  return p;
}

}  // namespace w4jit::internal
