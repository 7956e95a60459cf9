// Everything one `w4jit bench` run measured: the machine, its ceilings and
// one row per (implementation, layer, M, hot/cold). Produced by RunBench,
// consumed by the table, CSV, JSON and SVG writers.
#ifndef W4JIT_PERF_LIB_REPORT_BENCH_REPORT_H_
#define W4JIT_PERF_LIB_REPORT_BENCH_REPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "perf/lib/ceilings/roofline.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// Implementations a row can time. The first two are w4jit's modes.
inline constexpr const char* kImplW4a16 = "w4a16";
inline constexpr const char* kImplDa8w4 = "da8w4";
inline constexpr const char* kImplOneDnnBf16 = "onednn_bf16";
inline constexpr const char* kImplOneDnnU8s8 = "onednn_u8s8";

// BenchRow::bound: which roofline bound binds.
inline constexpr const char* kBoundMemory = "memory";
inline constexpr const char* kBoundCompute = "compute";

enum class RowStatus : int {
  kOk = 0,
  kFailed = 1,        // wrong output: never reported as a figure
  kNotAvailable = 2,  // the implementation cannot run here (note says why)
  kError = 3,         // it should have run but did not (note says why)
};
const char* ToString(RowStatus s);  // "ok", "FAILED", "n/a", "error"

// What every timed row has: whether it ran, why not, and how many samples
// its figures are taken from (each row names its own p50 and min fields:
// they are bench.json's keys).
struct TimedRow {
  RowStatus status = RowStatus::kOk;
  std::string note;  // why FAILED / n/a / error, or a caveat
  int samples = 0;

  bool ok() const { return status == RowStatus::kOk; }
  // A wrong output, or a run that should have worked and did not.
  bool failed() const {
    return status == RowStatus::kFailed || status == RowStatus::kError;
  }
};

struct BenchRow : TimedRow {
  std::string impl;   // kImpl*
  std::string layer;  // "qkv", ...
  int64_t n = 0, k = 0, group_size = 0, m = 0;
  bool cold = false;
  std::string kernel;  // Layer::kernel_names() joined by "+", oneDNN impl
  // What the kernels compute with, set where the layer or peer is made
  // (ComputeOpKey of Layer::compute_at, PeerComputeOp in row_metrics.h):
  // the compute peak the row is judged against follows it.
  std::string compute_op;
  double time_us = 0.0;  // median
  double min_us = 0.0;
  double p90_us = 0.0;
  int64_t weight_bytes = 0;     // weights (+ scales, zeros, bias) per call
  int64_t footprint_bytes = 0;  // what is cycled through: copies * weights
  int cold_copies = 0;
  double gflops = 0.0;       // 2 M N K / t
  double weight_gbps = 0.0;  // weight_bytes / t
  // The roofline (docs/bench.md): the time to read
  // weight_bytes at the read rate measured at footprint_bytes, and the time
  // of the M N K MACs at the compute peak of the kernel's instruction
  // (RowBounds in row_metrics.h); 0 where not measured. The larger one
  // binds: `bound` says which (kBoundMemory / kBoundCompute, "" if
  // neither), bound_us is its time.
  double memory_bound_us = 0.0;
  std::string memory_basis;  // "L3 read 16.8 MB": level, probe footprint
  double compute_bound_us = 0.0;
  std::string compute_basis;        // "peak bf16_dot_zmm", "peak amx_int8"
  double compute_peak_gmacs = 0.0;  // the peak compute_bound_us is taken at
  std::string bound;
  double bound_us = 0.0;
  // The share of the binding bound: 100 * bound_us / time_us. A row at
  // 100% runs at the roofline.
  double roofline_pct = 0.0;
  // The same from min_us: on a shared machine the p50 carries the noise of
  // other tenants while the ceiling is the best of its timings, so the min
  // is the like-for-like figure and the p50 the one a user will see.
  double roofline_pct_min = 0.0;
  std::string roofline_basis;  // the binding bound's basis
  // The ceiling that was timed interleaved with this row, if any: bytes/s
  // or MAC/s (the bound the run's roofline says binds), and what it is
  // ("bw 13.4 MB read", "peak int8_avx2_i16"), and the row's rate as a
  // percentage of it. It met the
  // same load as the row, but on a shared machine it can catch a busy
  // moment and read low, so roofline_pct is of the best figure of that
  // ceiling in the run (FoldInterleavedCeilings) and this is a column.
  double ceiling_rate = 0.0;
  std::string ceiling_basis;
  double interleaved_pct = 0.0;
};

// One prepared w4jit layer: creation (import + repack) and JIT cost.
struct LayerInfo {
  std::string impl;  // kImplW4a16 / kImplDa8w4
  std::string layer;
  int64_t n = 0, k = 0, group_size = 0;
  int64_t packed_bytes = 0;
  double create_ms = 0.0;  // Layer::Create, JIT included
  int64_t jit_generations = 0;
  double jit_ms = 0.0;  // kernel cache generation time during Create
  std::string kernel;
};

// One layer at one M on one threading backend and thread count (the
// `bench scaling` job; its efficiency is w4jit.report's).
struct ScalingRow : TimedRow {
  std::string impl;     // kImplW4a16 / kImplDa8w4
  std::string backend;  // "pool" / "omp"
  std::string layer;
  int64_t n = 0, k = 0, m = 0;
  int threads = 0;
  double time_us = 0.0;  // median
  double min_us = 0.0;
  double p90_us = 0.0;
};

// One layer in one mode at one M, with and without GPTQ act-order (the
// --act-order section): the same weights, the act-order layer made from a
// GPTQ checkpoint whose g_idx permutes K, all timed interleaved.
struct ActOrderRow : TimedRow {
  std::string impl;  // kImplW4a16 / kImplDa8w4
  std::string layer;
  int64_t n = 0, k = 0, group_size = 0, m = 0;
  double plain_p50_us = 0.0, plain_min_us = 0.0;
  double act_p50_us = 0.0, act_min_us = 0.0;
  // A second plain layer from the same checkpoint, timed alongside: the
  // noise floor of the comparison.
  double copy_p50_us = 0.0, copy_min_us = 0.0;
};

// One layer at one M in one of the `bench accuracy` job's variants: W4A16,
// DA8W4 with per-token or per-group activation scales. The error is the
// layer's (measured once on accuracy_rows rows of Gaussian x with outlier
// channels, against float64 on the same int4 weights); the times are hot,
// the three variants interleaved at this M.
struct AccuracyRow : TimedRow {
  std::string impl;  // kImplW4a16 / kImplDa8w4
  std::string layer;
  int64_t n = 0, k = 0, group_size = 0, m = 0;
  std::string act_quant;  // DA8W4: "per_token" / "per_group"; W4A16: ""
  int outliers = 0;
  double outlier_scale = 0.0;
  double rel_error = 0.0;  // relative L2 error
  double p50_us = 0.0, min_us = 0.0;
};

// One mode at one M through a whole model (`w4jit bench model`): a step
// runs every linear layer of every decoder layer in order, 4 calls per
// decoder layer of a dense model; a MoE model's, its attention linears and
// its fused MoE layer. The DRAM read rate is a plain streaming read of a
// DRAM-sized buffer timed in the same rounds as the steps.
struct ModelRow : TimedRow {
  std::string impl;         // kImplW4a16 / kImplDa8w4
  std::string model;        // preset name
  int layers = 0;           // decoder layers built
  std::string variant;      // "plain" (linears only) / "fused" (host epilogues)
  std::string step;         // "decode" / "prefill"
  int prefetch = -1;        // the --prefetch distance; -1: the defaults
  std::string tuning;       // the --tunings file's stem; empty: none
  bool huge_pages = false;  // LayerOptions::huge_pages
  int64_t m = 0;
  int64_t calls = 0;     // linear calls per step
  double time_ms = 0.0;  // p50 of a step
  double min_ms = 0.0;
  double p90_ms = 0.0;
  int64_t weight_bytes = 0;  // packed weights, scales, bias per step
  // The streaming read timed in the same rounds: its rate at its p50 and
  // at its min (best), and its p90 / min (the machine's own noise).
  double read_gbps = 0.0;
  double read_gbps_best = 0.0;
  double read_tail = 0.0;
  int model_layers = 0;  // the preset's decoder layers
  // A MoE model's (empty / 0 for a dense one): per decoder layer `calls /
  // layers` attention linears, then one fused MoE layer. weight_bytes is
  // then attention_bytes plus the packed bytes of the distinct experts
  // the step's routing touched (mean over the timed steps).
  std::string routing;  // "uniform" / "skewed"
  // "" for the whole step; with --parts "attention" (the step's attention
  // linears alone: weight_bytes = attention_bytes) or "moe" (its MoE
  // layers alone: the experts' bytes).
  std::string part;
  int64_t moe_calls = 0;           // MoE layer calls per step
  int64_t attention_bytes = 0;     // the attention linears' packed bytes
  int64_t expert_bytes = 0;        // one expert's, both projections
  double experts_per_layer = 0.0;  // distinct experts a layer touches, mean
  double macs = 0.0;               // multiply-accumulates per step
  // The mode's compute peak loop timed in the same rounds: its rate at its
  // p50 and at its min (GMAC/s).
  double peak_gmacs = 0.0;
  double peak_gmacs_best = 0.0;

  bool is_moe() const { return !routing.empty(); }
};

// What a model copy was built under besides its mode: "pf<prefetch>", the
// --tunings label, or "" for the defaults (prefetch < 0, tuning empty).
std::string ModelSettingLabel(int prefetch, const std::string& tuning);

// One fused MoE layer (MoeLayer) of a model preset per mode, routing and
// token count (the `bench moe` job, perf/lib/sections/moe_bench.h).
struct MoeBenchRow {
  std::string preset;
  Mode mode = Mode::kW4A16;
  bool skewed = false;  // expert 0 in every token, the rest uniform
  int64_t tokens = 0;
  int threads = 0;
  double min_us = 0.0, median_us = 0.0;
  // The same layer as a host writes it without MoeLayer: for each active
  // expert in turn, its rows gathered, its w13 and w2 Layer::Run (each
  // parallel on its own), the weighted rows added into y; timed
  // interleaved with the fused layer.
  double loop_min_us = 0.0, loop_median_us = 0.0;
  int64_t touched_experts = 0;
  double touched_bytes = 0.0;
  double read_bytes_per_s = 0.0;  // measured at the touched footprint
  double macs = 0.0;              // multiply-accumulates per call
  double peak_macs_per_s = 0.0;   // the mode's instruction, 0 if unknown
};

struct BenchReport {
  std::string w4jit_version;
  std::string onednn_version;
  std::string date_utc;  // ISO 8601
  std::string preset;
  internal::CpuProfile cpu;
  int threads = 0;
  std::vector<int64_t> ms;
  std::vector<std::string> impls;  // modes and peers that were run
  double min_time_s = 0.0;
  int reps = 0;
  Roofline roofline;
  std::vector<LayerInfo> layers;
  std::vector<BenchRow> rows;
  // How waiting threads behave while the rows are timed (header line).
  std::string wait_policy;
  std::vector<ScalingRow> scaling;     // empty without --scaling
  std::vector<ActOrderRow> act_order;  // empty without --act-order
  std::vector<AccuracyRow> accuracy;   // empty without --accuracy
  // `w4jit bench model`: the model, its packed bytes per mode and
  // variant, the read probe's buffer, and one row per mode, variant and M.
  std::string model;
  int64_t model_read_bytes = 0;
  std::vector<LayerInfo> model_layers;  // one per mode, variant and shape
  std::vector<ModelRow> model_rows;
  std::vector<MoeBenchRow> moe;  // the `bench moe` job (it runs alone)

  bool any_failed() const;
};

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_REPORT_BENCH_REPORT_H_
