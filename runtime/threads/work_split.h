// How a layer's work is cut into the chunks ParallelRun hands to threads.
// Pure functions of the shape and thread count: no timing, no state, so
// every backend and thread count computes the same output elements in the
// same order (results stay bit-identical).
#ifndef W4JIT_RUNTIME_THREADS_WORK_SPLIT_H_
#define W4JIT_RUNTIME_THREADS_WORK_SPLIT_H_

#include <cstdint>

namespace w4jit::internal {

struct Range {
  int64_t begin;
  int64_t end;
};

// Parts of b needed to hold a (a >= 0, b > 0).
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Splits [0, total) into `parts` contiguous ranges of sizes differing by at
// most `align` (all boundaries are multiples of `align`); returns range
// `part`. parts >= 1, 0 <= part < parts.
Range SplitRange(int64_t total, int parts, int part, int64_t align = 1);

// Small-M split of `blocks` column blocks (boundaries on multiples of
// `align`) over `threads` threads: one contiguous, equal share per thread,
// the caller's included, so that no chunk needs a shared counter and each
// thread streams one run of weights. Returns how many parts to run (never
// more than the aligned units, at least 1); part i is
// SplitRange(blocks, parts, i, align).
int SmallMParts(int64_t blocks, int threads, int64_t align = 1);

// Large-M GEMM split (prefill, batched decode above the hand-over): the
// column units are cut into `panels` ranges of at most panel_units each
// (panel_units is sized so that one panel of weights stays in a core's
// L2), the row tiles into `row_parts` ranges; work item i is the panel
// i / row_parts with the row range i % row_parts. A thread running item i
// streams its panel's weights once into L2 and reuses them for every row
// tile of its range.
struct GemmSplit2d {
  int64_t panels = 1;
  int64_t row_parts = 1;
  int64_t items() const { return panels * row_parts; }
};

// Chooses the split for `threads` threads. Rows are cut only when there
// are fewer panels than threads (each extra row part re-reads its panel);
// the item count is rounded up to a multiple of `threads` where the
// columns allow, so no thread idles through a partial last round. Every
// argument is clamped to >= 1.
GemmSplit2d PlanGemmSplit2d(int64_t row_tiles, int64_t col_units,
                            int64_t panel_units, int threads);

// The row tiles and column units of work item `item`; panel sizes differ
// by at most one unit, row range sizes by at most one tile.
struct GemmWorkItem {
  Range rows;
  Range cols;
};
GemmWorkItem GemmSplit2dItem(const GemmSplit2d& split, int64_t row_tiles,
                             int64_t col_units, int64_t item);

// W4A16 dequantize + panel path (large M): the output is a grid of tasks,
// row blocks (M blocks) x column blocks (one packed block of NB columns
// each). A task dequantizes its column block one K block at a time and
// multiplies it with every row of its row block.
struct W4a16PanelGrid {
  int64_t m = 0;           // rows of the call
  int64_t row_block = 0;   // rows per row block (a multiple of mr)
  int64_t row_blocks = 0;  // the last one may be shorter
  int64_t col_blocks = 0;  // packed column blocks
  int chunks = 1;          // parallel chunks, <= tasks()

  int64_t tasks() const { return row_blocks * col_blocks; }
};

// Row blocks of about `mc` rows (at least one row tile `mr`), all the same
// height in whole row tiles but the last: 100 rows at mc = 96, mr = 6 are
// 54 + 46, not 96 + 4. When there are fewer tasks than threads, more row
// blocks (down to one row tile each) so that every thread gets work.
W4a16PanelGrid MakeW4a16PanelGrid(int64_t m, int64_t col_blocks, int mr,
                                  int64_t mc, int threads);

// One task: rows [m0, m0 + rows) of column block `col_block`.
struct W4a16PanelTask {
  int64_t m0 = 0;
  int64_t rows = 0;
  int64_t col_block = 0;
};

// Tasks are numbered column block by column block, the row blocks of one
// column block consecutive: a thread walks all row blocks of a column
// block before the next, so the block's packed weights (K/2 x NB bytes,
// 64 KB at K = 4096, NB = 32) stay in its L2 for every reuse.
W4a16PanelTask W4a16PanelTaskAt(const W4a16PanelGrid& grid, int64_t task);

// The tasks of chunk `chunk`: a contiguous range, cut so that every chunk
// gets the same number of rows x column blocks to within one task (a short
// last row block counts for its rows, not as a whole task).
Range W4a16PanelChunk(const W4a16PanelGrid& grid, int chunk);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_THREADS_WORK_SPLIT_H_
