// How a layer's work is cut between threads: pure functions of the shape,
// the tile sizes and the thread count, so that tests can check coverage
// and balance without running a kernel. The kernels compute every output
// element by the same instructions in the same order whatever the cut, so
// results are bit-identical across thread counts and tile shapes.
#ifndef W4JIT_RUNTIME_WORK_SPLIT_H_
#define W4JIT_RUNTIME_WORK_SPLIT_H_

#include <cstdint>

#include "runtime/parallel.h"

namespace w4jit::internal {

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

#endif  // W4JIT_RUNTIME_WORK_SPLIT_H_
