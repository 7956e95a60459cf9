// Which code path of a kernel family runs from which M, as one table per
// layer (after oneDNN's brgemm_matmul, which builds its kernel set at init
// and indexes it at execute): the family's Build makes the kernels of the
// paths the table names, and Run takes the row of its M, so the choice is
// stated once. Each family has its Path enum and the function that makes
// its table from the parameters (runtime/w4a16/w4a16_regime.h,
// runtime/da8w4/da8w4_regime.h).
#ifndef W4JIT_RUNTIME_REGIME_H_
#define W4JIT_RUNTIME_REGIME_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace w4jit::internal {

// `Path` is the family's enum, with a `const char* ToString(Path)` beside
// it.
template <class Path>
struct Regime {
  struct Row {
    int64_t min_m;  // this row's path from this M on (the first row: 1)
    Path path;
  };
  std::vector<Row> rows;  // increasing min_m, never empty once made

  // A table of one row: `path` at every M.
  explicit Regime(Path first) : rows{{1, first}} {}

  // From `min_m` (at least 1) on, `path`: a later call overrides the rows
  // from its M on, so that the last threshold set wins where it holds.
  void From(int64_t min_m, Path path) {
    min_m = std::max<int64_t>(min_m, 1);
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [&](const Row& r) { return r.min_m >= min_m; }),
               rows.end());
    if (rows.empty() || rows.back().path != path) rows.push_back({min_m, path});
  }

  // The path of a call with m rows (the first row's below 1).
  Path PathAt(int64_t m) const {
    Path path = rows.front().path;
    for (const Row& r : rows) {
      if (r.min_m > m) break;
      path = r.path;
    }
    return path;
  }
  bool Uses(Path path) const {
    return std::any_of(rows.begin(), rows.end(),
                       [&](const Row& r) { return r.path == path; });
  }
  // "int4_small from 1, tiles from 12" (for logs and tests).
  std::string str() const {
    std::string s;
    for (const Row& r : rows) {
      absl::StrAppend(&s, s.empty() ? "" : ", ", ToString(r.path), " from ",
                      r.min_m);
    }
    return s;
  }
};

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_REGIME_H_
