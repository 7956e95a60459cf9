#include "jit/w4a16_amx_plan.h"

#include "absl/strings/str_cat.h"
#include "jit/amx_tile_config.h"

namespace w4jit::internal {

std::array<uint8_t, 64> W4a16AmxPlan::TileConfig() const {
  AmxTileConfig cfg;
  for (int rt = 0; rt < row_tiles; ++rt) {
    for (int half = 0; half < 2; ++half)
      cfg.Set(kC + 2 * rt + half, Rows(rt), 64);
    cfg.Set(kA + rt, Rows(rt), 2 * kW4a16AmxKStep);
  }
  for (int half = 0; half < 2; ++half)
    cfg.Set(kB + half, kW4a16AmxKStep / 2, 64);
  return cfg.bytes();
}

absl::StatusOr<W4a16AmxPlan> MakeW4a16AmxPlan(int mr, int64_t group_k) {
  if (mr < 1 || mr > kW4a16AmxMaxRows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AMX tile of ", mr, " rows not in [1, ", kW4a16AmxMaxRows, "]"));
  }
  if (group_k <= 0 || group_k % kW4a16AmxKStep != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AMX tiles step K by ", kW4a16AmxKStep,
                     " within a group: group ", group_k, " is not a multiple"));
  }
  W4a16AmxPlan p;
  p.mr = mr;
  p.row_tiles = mr > 16 ? 2 : 1;
  p.k_steps = group_k / kW4a16AmxKStep;
  return p;
}

}  // namespace w4jit::internal
