// The W4A16 regime table (runtime/w4a16/w4a16_regime.h): which path runs
// at which M, from the thresholds and what the layer can run.
#include "runtime/w4a16/w4a16_regime.h"

#include "gtest/gtest.h"

namespace w4jit::internal {
namespace {

TEST(W4a16Regime, ThresholdsInOrder) {
  const W4a16Regime r = MakeW4a16Regime({false, false, false, 8, 16, 1});
  EXPECT_EQ(r.str(), "int4_small from 1, int4_tall from 8, panels from 16");
  EXPECT_EQ(r.PathAt(1), W4a16Path::kInt4Small);
  EXPECT_EQ(r.PathAt(7), W4a16Path::kInt4Small);
  EXPECT_EQ(r.PathAt(8), W4a16Path::kInt4Tall);
  EXPECT_EQ(r.PathAt(15), W4a16Path::kInt4Tall);
  EXPECT_EQ(r.PathAt(16), W4a16Path::kPanels);
  EXPECT_EQ(r.PathAt(int64_t{1} << 40), W4a16Path::kPanels);
}

TEST(W4a16Regime, TilesTakeOverBelowThePanels) {
  const W4a16Regime r = MakeW4a16Regime({false, false, true, 8, 16, 12});
  EXPECT_EQ(r.str(), "int4_small from 1, int4_tall from 8, tiles from 12");
  EXPECT_FALSE(r.Uses(W4a16Path::kPanels));
  // Tiles from M = 1 leave nothing else.
  EXPECT_EQ(MakeW4a16Regime({false, false, true, 8, 16, 1}).str(),
            "tiles from 1");
  // Tiles above the panels: panels between.
  EXPECT_EQ(MakeW4a16Regime({false, false, true, 8, 16, 64}).str(),
            "int4_small from 1, int4_tall from 8, panels from 16, tiles "
            "from 64");
}

TEST(W4a16Regime, FlavourAndNumerics) {
  // The bf16-dot flavour has no panels: its tall tile runs every larger M.
  EXPECT_EQ(MakeW4a16Regime({true, false, false, 8, 16, 1}).str(),
            "int4_small from 1, int4_tall from 8");
  // A tall tile at or past the panels never runs.
  EXPECT_EQ(MakeW4a16Regime({false, false, false, 32, 16, 1}).str(),
            "int4_small from 1, panels from 16");
  // Zentorch numerics: panels at every M but the tiles'.
  EXPECT_EQ(MakeW4a16Regime({false, true, false, 8, 16, 12}).str(),
            "panels from 1");
  EXPECT_EQ(MakeW4a16Regime({false, true, true, 8, 16, 12}).str(),
            "panels from 1, tiles from 12");
}

}  // namespace
}  // namespace w4jit::internal
