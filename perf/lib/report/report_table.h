// The human-readable result: per implementation a table and a summary line.
#ifndef W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_
#define W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_

#include <string>

#include "perf/lib/report/bench_report.h"

namespace w4jit::perf {

// Machine, threads, date, versions and the measured ceilings.
std::string FormatHeader(const BenchReport& report);
// One table of `impl`'s rows (layer, M, cache, median time, GFLOP/s,
// weight GB/s, % of roofline and its basis, speedups, kernel).
std::string FormatTable(const BenchReport& report, const std::string& impl);
// The `bench scaling` job ("" without it).
std::string FormatScaling(const BenchReport& report);
// The --act-order section ("" without it).
std::string FormatActOrder(const BenchReport& report);
// The `bench accuracy` job ("" without it).
std::string FormatAccuracy(const BenchReport& report);
// `w4jit bench model` ("" without it): per mode, variant and M the step's
// p50/min/p90, tokens/s, weight GB/s and its % of the read alongside.
std::string FormatModel(const BenchReport& report);
// "W4A16: 20 ok, ...; geomean speedup ...; median roofline ..."
std::string FormatSummary(const BenchReport& report, const std::string& impl);
// Header, then table and summary of every implementation.
std::string FormatReport(const BenchReport& report);

// Layer::kernel_names() joined by '+', shortened for a table: variants
// that differ only in the register tile are listed once, e.g.
// "da8w4_s4_g128_n512_k1024_m*_bf16tobf16__avx2 (9 tiles)".
std::string ShortKernelNames(const std::string& names);

// "W4A16", "DA8W4", "oneDNN bf16", "oneDNN u8s8".
std::string ImplTitle(const std::string& impl);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_REPORT_TABLE_H_
