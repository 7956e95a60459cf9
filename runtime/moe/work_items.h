// How one phase of a MoE call (all active experts' w13, or all their w2)
// is cut into work items and the items into chunks for ParallelRun.
//
// An item is (expert, row range, column panel). Panels are fixed when the
// layer is created and row ranges depend on the routing alone (at most
// kMaxItemRows rows each), so every item, and so every output element, is
// computed the same way whatever the thread count. Chunks are contiguous
// runs of items (expert by expert, so a thread reuses its expert's rows)
// of about equal cost, cost ~ (rows + kRowOverhead) x columns: weight
// streaming dominates at a few rows, arithmetic at many.
#ifndef W4JIT_RUNTIME_MOE_WORK_ITEMS_H_
#define W4JIT_RUNTIME_MOE_WORK_ITEMS_H_

#include <cstdint>
#include <vector>

#include "runtime/moe/routing.h"
#include "runtime/threads/work_split.h"

namespace w4jit::internal {

inline constexpr int64_t kMaxItemRows = 128;
inline constexpr int64_t kRowOverhead = 4;

struct MoeItem {
  int64_t expert = 0;
  int64_t panel = 0;
  Range rows;  // sorted positions (Routing), within the expert's
};

// The items of one phase: experts with rows only, in expert order; each
// expert's rows cut into ceil(rows / kMaxItemRows) near-equal ranges, each
// range crossed with every panel.
std::vector<MoeItem> MakeMoeItems(const Routing& routing, int64_t experts,
                                  int64_t panels);

// Chunk boundaries: chunk c runs items [bounds[c], bounds[c + 1]).
// panel_cols[p] is the width of panel p. At most `threads` chunks, none
// empty.
std::vector<int64_t> ChunkMoeItems(const std::vector<MoeItem>& items,
                                   const std::vector<int64_t>& panel_cols,
                                   int threads);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_MOE_WORK_ITEMS_H_
