// W4A16 and DA8W4 through the public Layer API, for every layer of every
// preset and the bench's default M values. Each layer's output is checked
// against the reference before it is timed.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "perf/gbench/prepared_layers.h"
#include "perf/gbench/registry.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/bench_options.h"
#include "perf/lib/output_check.h"

namespace w4jit::perf {
namespace {

// The reference runs at ~1 GMAC/s: above this it is not timed, as in
// `w4jit bench`.
constexpr double kReferenceMaxMacs = 1 << 30;

void BM_LayerRun(benchmark::State& state, const LayerShape& shape, Mode mode) {
  const int64_t m = state.range(0), n = shape.n, k = shape.k;
  absl::StatusOr<const Layer*> layer = LayerFor(shape, mode);
  if (!layer.ok()) {
    state.SkipWithError(std::string(layer.status().message()).c_str());
    return;
  }
  const LayerCompute compute = (*layer)->compute_at(m);
  const bool reference = compute.op == ComputeOp::kScalar;
  if (reference && static_cast<double>(m) * n * k > kReferenceMaxMacs) {
    state.SkipWithError("reference path: too slow to time at this size");
    return;
  }
  const std::vector<uint16_t> x = BenchActivations(m, k, 0xAC7ull + m);
  std::vector<uint16_t> y(static_cast<size_t>(m * n));
  absl::Status s = (*layer)->Run(m, x.data(), k, y.data(), n);
  if (s.ok()) {
    s = CheckLayerOutput((*layer)->desc(), (*WeightsFor(shape))->weights, m,
                         x.data(), k, y.data(), n);
  }
  if (!s.ok()) {
    state.SkipWithError(absl::StrCat("not timed: ", s.message()).c_str());
    return;
  }
  for (auto _ : state) {
    if (!(*layer)->Run(m, x.data(), k, y.data(), n).ok()) {
      state.SkipWithError("Run failed");
      break;
    }
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * m * n * k, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
  state.counters["weight_B/s"] =
      benchmark::Counter(static_cast<double>((*layer)->packed_bytes()),
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  // What the kernels at this M compute with ("int8_dot/512").
  state.SetLabel(absl::StrCat(ToString(compute.op), "/", compute.vector_bits));
}

}  // namespace

void RegisterLayerBenchmarks() {
  for (const ModelPreset& preset : ModelPresets()) {
    for (const LayerShape& shape : preset.layers) {
      for (Mode mode : {Mode::kW4A16, Mode::kDA8W4}) {
        benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
            absl::StrCat(mode == Mode::kW4A16 ? "W4A16/" : "DA8W4/",
                         preset.name, "/", shape.name)
                .c_str(),
            [shape, mode](benchmark::State& state) {
              BM_LayerRun(state, shape, mode);
            });
        b->ArgName("M")->UseRealTime()->Unit(benchmark::kMicrosecond);
        for (int64_t m : LayersOptions().ms) b->Arg(m);
      }
    }
  }
}

}  // namespace w4jit::perf
