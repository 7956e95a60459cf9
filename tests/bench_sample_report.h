// A small hand-made BenchReport for the tests of the bench's writers: ok,
// FAILED and n/a rows of both modes and both peers, hot and cold, rows
// bound by memory and by compute (W4A16 at M = 1 and at M = 8), and text
// that needs escaping in CSV and XML.
#ifndef W4JIT_TESTS_BENCH_SAMPLE_REPORT_H_
#define W4JIT_TESTS_BENCH_SAMPLE_REPORT_H_

#include <string>

#include "perf/lib/report/bench_report.h"
#include "perf/lib/report/row_metrics.h"

namespace w4jit::perf {

// The terminal table with every run of spaces as one: what a test looks
// for does not depend on the column widths.
inline std::string Squeezed(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != ' ' || out.empty() || out.back() != ' ') out += c;
  }
  return out;
}

inline BenchRow SampleRow(const char* impl, int64_t m, bool cold,
                          double time_us, int64_t weight_bytes) {
  BenchRow r;
  r.impl = impl;
  r.layer = "qkv";
  r.n = 6144;
  r.k = 4096;
  r.group_size = 128;
  r.m = m;
  r.cold = cold;
  r.time_us = time_us;
  r.min_us = time_us * 0.9;
  r.p90_us = time_us * 1.2;
  r.samples = 20;
  r.weight_bytes = weight_bytes;
  r.footprint_bytes = cold ? weight_bytes * 5 : weight_bytes;
  r.cold_copies = cold ? 5 : 0;
  r.kernel = std::string(impl) + "_kernel__avx2";
  const std::string i = impl;
  r.compute_op = i == kImplW4a16        ? "f32_fma_ymm"
                 : i == kImplDa8w4      ? "int8_avx2_i16"
                 : i == kImplOneDnnU8s8 ? "int8_dot"
                                        : "bf16_dot";
  return r;
}

inline BenchReport SampleReport() {
  BenchReport report;
  report.w4jit_version = "0.1.0";
  report.onednn_version = "2.6.3";
  report.date_utc = "2024-01-02T03:04:05Z";
  report.preset = "llama3-8b";
  report.cpu.name = "Test CPU <with> \"markup\" & co";
  report.cpu.isa = internal::IsaTier::kAvx2;
  report.cpu.l2_bytes = 512 << 10;
  report.cpu.l3_bytes = 32 << 20;
  report.threads = 2;
  report.ms = {1, 8, 64};
  report.impls = {kImplW4a16, kImplDa8w4, kImplOneDnnBf16, kImplOneDnnU8s8};
  ComputePeak int8;
  int8.key = "int8_avx2";
  int8.available = true;
  int8.macs_per_s = 100e9;
  ComputePeak fma = int8;
  fma.key = "f32_fma_ymm";
  fma.macs_per_s = 100e9;
  ComputePeak vnni;
  vnni.key = "int8_vnni_zmm";
  vnni.note = "n/a: CPU lacks AVX512_VNNI";
  report.roofline.peaks = {int8, fma, vnni};
  report.roofline.bandwidths = {{"L2-sized", 1 << 20, 90e9, 2, 32},
                                {"L3-sized", 16 << 20, 30e9, 2, 32},
                                {"DRAM-sized", 128 << 20, 15e9, 2, 32}};
  report.roofline.l2_bytes = 2 * report.cpu.l2_bytes;
  report.roofline.l3_bytes = report.cpu.l3_bytes;
  const int64_t w4 = 6144LL * 4096 / 2 + 6144LL * 32 * 4;
  for (bool cold : {false, true}) {
    report.rows.push_back(SampleRow(kImplW4a16, 1, cold, 900, w4));
    report.rows.push_back(SampleRow(kImplDa8w4, 1, cold, 700, w4));
    report.rows.push_back(
        SampleRow(kImplOneDnnU8s8, 1, cold, 2000, 6144LL * 4096));
    BenchRow bf16 = SampleRow(kImplOneDnnBf16, 1, cold, 0, 0);
    bf16.status = RowStatus::kNotAvailable;
    bf16.note = "n/a (oneDNN: unimplemented on this ISA)";
    report.rows.push_back(bf16);
  }
  // M = 8: 8 x 25.2 M MACs at 100 G MAC/s take 2013 us, reading the
  // weights at 30 GB/s 446 us: the compute bound binds.
  report.rows.push_back(SampleRow(kImplW4a16, 8, false, 2500, w4));
  report.rows.push_back(SampleRow(kImplW4a16, 64, false, 30000, w4));
  report.rows.push_back(
      SampleRow(kImplOneDnnU8s8, 64, false, 20000, 6144LL * 4096));
  BenchRow wrong = SampleRow(kImplDa8w4, 64, false, 0, w4);
  wrong.status = RowStatus::kFailed;
  wrong.note = "wrong output, not timed: y[0, 1] = 2, reference 1";
  report.rows.push_back(wrong);
  for (BenchRow& row : report.rows) FillRowMetrics(report.roofline, &row);
  LayerInfo info;
  info.impl = kImplW4a16;
  info.layer = "qkv";
  info.packed_bytes = w4;
  report.layers.push_back(info);
  return report;
}

}  // namespace w4jit::perf

#endif  // W4JIT_TESTS_BENCH_SAMPLE_REPORT_H_
