// The MoE routing sort and work split: pure functions of the routing and
// the panel widths (runtime/moe/routing.h, runtime/moe/work_items.h).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/moe/routing.h"
#include "runtime/moe/work_items.h"

namespace w4jit::internal {
namespace {

TEST(MoeRoutingTest, StableCountingSortByExpert) {
  // 3 tokens, k = 2, 4 experts; expert 2 twice in token 1, expert 3 none.
  const std::vector<int32_t> ids = {1, 0, 2, 2, 0, 1};
  const Routing r = GroupByExpert(3, 2, 4, ids.data());
  EXPECT_EQ(r.offset, (std::vector<int64_t>{0, 2, 4, 6, 6}));
  EXPECT_EQ(r.slot_at, (std::vector<int64_t>{1, 4, 0, 5, 2, 3}));
  for (int64_t s = 0; s < 6; ++s) EXPECT_EQ(r.slot_at[r.pos_of[s]], s);
  EXPECT_EQ(r.rows(3), 0);
}

TEST(MoeRoutingTest, ValidationNamesTheSlot) {
  const std::vector<int32_t> ids = {0, 4};
  const std::vector<float> w = {1.0f, 1.0f};
  EXPECT_NE(ValidateRouting(1, 2, 4, ids.data(), w.data())
                .message()
                .find("topk_ids[0, 1] = 4"),
            std::string::npos);
  EXPECT_TRUE(ValidateRouting(1, 1, 4, ids.data(), nullptr).ok());
}

TEST(MoeWorkItemsTest, ItemsCoverEveryRoutedRowOncePerPanel) {
  // Expert 0: 300 rows (three items of 100), expert 2: 5 rows, others none.
  std::vector<int32_t> ids(305, 0);
  for (int i = 300; i < 305; ++i) ids[i] = 2;
  const Routing r = GroupByExpert(305, 1, 4, ids.data());
  const std::vector<MoeItem> items = MakeMoeItems(r, 4, 2);
  ASSERT_EQ(items.size(), 8u);
  std::vector<int> seen(305 * 2, 0);
  for (const MoeItem& it : items) {
    EXPECT_LE(it.rows.end - it.rows.begin, kMaxItemRows);
    EXPECT_GE(it.rows.begin, r.offset[it.expert]);
    EXPECT_LE(it.rows.end, r.offset[it.expert + 1]);
    for (int64_t p = it.rows.begin; p < it.rows.end; ++p) {
      ++seen[p * 2 + it.panel];
    }
  }
  for (int v : seen) EXPECT_EQ(v, 1);
}

TEST(MoeWorkItemsTest, ChunksAreContiguousNonEmptyAndBalanced) {
  std::vector<int32_t> ids;
  for (int t = 0; t < 64; ++t) {
    for (int j = 0; j < 8; ++j) ids.push_back((t * 7 + j * 13) % 128);
  }
  const Routing r = GroupByExpert(64, 8, 128, ids.data());
  const std::vector<MoeItem> items = MakeMoeItems(r, 128, 3);
  const std::vector<int64_t> widths = {256, 256, 256};
  for (int threads : {1, 2, 3, 7, 64, 10000}) {
    const std::vector<int64_t> b = ChunkMoeItems(items, widths, threads);
    const int64_t chunks = static_cast<int64_t>(b.size()) - 1;
    EXPECT_EQ(b.front(), 0);
    EXPECT_EQ(b.back(), static_cast<int64_t>(items.size()));
    EXPECT_LE(chunks, threads);
    EXPECT_EQ(chunks, std::min<int64_t>(threads, items.size()));
    for (int64_t c = 0; c < chunks; ++c) EXPECT_LT(b[c], b[c + 1]);
  }
  // Two threads: each gets about half the cost.
  const std::vector<int64_t> b = ChunkMoeItems(items, widths, 2);
  int64_t first = 0, total = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const int64_t cost =
        (items[i].rows.end - items[i].rows.begin + kRowOverhead) * 256;
    total += cost;
    if (static_cast<int64_t>(i) < b[1]) first += cost;
  }
  EXPECT_NEAR(static_cast<double>(first) / total, 0.5, 0.05);
}

TEST(MoeWorkItemsTest, NoItemsNoChunksBeyondOne) {
  const std::vector<MoeItem> none;
  const std::vector<int64_t> b = ChunkMoeItems(none, {64}, 4);
  EXPECT_EQ(b, (std::vector<int64_t>{0, 0}));
}

}  // namespace
}  // namespace w4jit::internal
