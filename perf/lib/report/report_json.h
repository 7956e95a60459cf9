// The enums of bench.json and sweep.json in words, for the rows' to_json
// (NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE in report_files.cc and
// sweep_output.cc).
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_JSON_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_JSON_H_

#include "nlohmann/json.hpp"
#include "perf/lib/report/bench_report.h"
#include "w4jit/types.hpp"

namespace w4jit {

NLOHMANN_JSON_SERIALIZE_ENUM(Mode,
                             {{Mode::kW4A16, "w4a16"}, {Mode::kDA8W4, "da8w4"}})

namespace perf {

NLOHMANN_JSON_SERIALIZE_ENUM(RowStatus, {{RowStatus::kOk, "ok"},
                                         {RowStatus::kFailed, "FAILED"},
                                         {RowStatus::kNotAvailable, "n/a"},
                                         {RowStatus::kError, "error"}})

}  // namespace perf
}  // namespace w4jit

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_JSON_H_
