// The 64 bytes ldtilecfg loads (palette 1), built tile by tile: shared by
// the tile plans of every AMX kernel (jit/da8w4_amx_plan.h,
// jit/w4a16_amx_plan.h).
#ifndef W4JIT_JIT_AMX_TILE_CONFIG_H_
#define W4JIT_JIT_AMX_TILE_CONFIG_H_

#include <array>
#include <cstdint>

namespace w4jit::internal {

class AmxTileConfig {
 public:
  AmxTileConfig() { bytes_[0] = 1; }  // palette 1; start_row 0
  // Tile `tile` holds `rows` rows of `colsb` bytes (bytes 16 + 2 tile: its
  // bytes per row as uint16; byte 48 + tile: its rows).
  void Set(int tile, int rows, int colsb) {
    bytes_[16 + 2 * tile] = static_cast<uint8_t>(colsb & 0xFF);
    bytes_[17 + 2 * tile] = static_cast<uint8_t>(colsb >> 8);
    bytes_[48 + tile] = static_cast<uint8_t>(rows);
  }
  const std::array<uint8_t, 64>& bytes() const { return bytes_; }

 private:
  std::array<uint8_t, 64> bytes_ = {};
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_AMX_TILE_CONFIG_H_
