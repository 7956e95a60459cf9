// The DA8W4 regime table (runtime/da8w4/da8w4_regime.h): which path runs
// at which M, from the thresholds and what the layer can run, as
// Da8w4JitKernel::Run chose it before the table.
#include "runtime/da8w4/da8w4_regime.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace w4jit::internal {
namespace {

// Run's choice before the table, written out: one pass up to the
// hand-over, then the tiles, the panels or the in-loop tiles.
Da8w4Path RunsBefore(const Da8w4RegimeInputs& in, int64_t m) {
  if (m <= in.handover_m) return Da8w4Path::kOnePass;
  if (in.tiles && m >= in.amx_min_m) return Da8w4Path::kTiles;
  if (in.panels && m >= in.panel_min_m) return Da8w4Path::kPanels;
  return Da8w4Path::kInLoop;
}

TEST(Da8w4Regime, ThresholdsInOrder) {
  const Da8w4Regime r = MakeDa8w4Regime({16, true, 32, false, 1});
  EXPECT_EQ(r.str(), "one_pass from 1, in_loop from 17, panels from 32");
  EXPECT_EQ(r.PathAt(1), Da8w4Path::kOnePass);
  EXPECT_EQ(r.PathAt(16), Da8w4Path::kOnePass);
  EXPECT_EQ(r.PathAt(17), Da8w4Path::kInLoop);
  EXPECT_EQ(r.PathAt(31), Da8w4Path::kInLoop);
  EXPECT_EQ(r.PathAt(32), Da8w4Path::kPanels);
  EXPECT_EQ(r.PathAt(int64_t{1} << 40), Da8w4Path::kPanels);
  EXPECT_FALSE(r.Uses(Da8w4Path::kTiles));
}

TEST(Da8w4Regime, TilesTakeOverFromTheirM) {
  // The Xeon's defaults: tiles from 24, before the panels' 32, which then
  // never run (their kernels are not built).
  const Da8w4Regime r = MakeDa8w4Regime({16, true, 32, true, 24});
  EXPECT_EQ(r.str(), "one_pass from 1, in_loop from 17, tiles from 24");
  EXPECT_FALSE(r.Uses(Da8w4Path::kPanels));
  // Tiles above the panels: panels between.
  EXPECT_EQ(MakeDa8w4Regime({16, true, 32, true, 64}).str(),
            "one_pass from 1, in_loop from 17, panels from 32, tiles from 64");
  EXPECT_TRUE(Decodes(Da8w4Path::kTiles));
  EXPECT_TRUE(Decodes(Da8w4Path::kPanels));
  EXPECT_FALSE(Decodes(Da8w4Path::kInLoop));
}

TEST(Da8w4Regime, NothingBelowTheHandover) {
  // Thresholds at or below the hand-over start just above it.
  EXPECT_EQ(MakeDa8w4Regime({16, true, 1, false, 1}).str(),
            "one_pass from 1, panels from 17");
  EXPECT_EQ(MakeDa8w4Regime({16, true, 8, true, 4}).str(),
            "one_pass from 1, tiles from 17");
  // Zen 4: no panels, the 2D split from M = 3.
  EXPECT_EQ(MakeDa8w4Regime({2, false, 32, false, 1}).str(),
            "one_pass from 1, in_loop from 3");
  // A hand-over of 0: the 2D split at every M.
  EXPECT_EQ(MakeDa8w4Regime({0, false, 32, false, 1}).str(), "in_loop from 1");
}

// Every M up to past the largest threshold, over a grid of thresholds:
// the table picks what Run picked before it.
TEST(Da8w4Regime, AgreesWithRunsChoiceBefore) {
  for (const int64_t handover : {0, 1, 2, 16, 40}) {
    for (const bool panels : {false, true}) {
      for (const int64_t panel_min : {1, 17, 32, 64}) {
        for (const bool tiles : {false, true}) {
          for (const int64_t amx_min : {1, 17, 24, 32, 100}) {
            const Da8w4RegimeInputs in{handover, panels, panel_min, tiles,
                                       amx_min};
            const Da8w4Regime r = MakeDa8w4Regime(in);
            for (int64_t m = 1; m <= 128; ++m) {
              ASSERT_EQ(r.PathAt(m), RunsBefore(in, m))
                  << r.str() << " at m = " << m;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace w4jit::internal
