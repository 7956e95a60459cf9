// The DA8W4 activation quantizer alone, for each distinct K of the presets
// (group 128) and the bench's M values: it must stay negligible next to
// the GEMM (shared/design/kernels.md).
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "dispatch/cpu_profile.h"
#include "jit/act_quantizer_generator.h"
#include "perf/gbench/registry.h"
#include "perf/lib/bench_config.h"
#include "perf/lib/bench_data.h"
#include "runtime/da8w4_kernel_lookup.h"

namespace w4jit::perf {
namespace {

void BM_ActQuantizer(benchmark::State& state, int64_t k) {
  const int64_t m = state.range(0), group = 128;
  const internal::IsaTier isa = internal::ActiveIsa();
  if (isa < internal::IsaTier::kAvx2) {
    state.SkipWithError("no JIT ISA on this CPU");
    return;
  }
  internal::ActQuantConfig config;
  config.isa = isa;
  config.act_dtype = DType::kBF16;
  config.k = k;
  config.group_size = group;
  absl::StatusOr<const internal::Generator*> gen =
      internal::GetActQuantizer(config);
  if (!gen.ok()) {
    state.SkipWithError(std::string(gen.status().message()).c_str());
    return;
  }
  const auto fn = (*gen)->entry<internal::ActQuantFn>();
  const std::vector<uint16_t> x = BenchActivations(m, k, 3);
  std::vector<int8_t> qa(static_cast<size_t>(m * internal::QaRowStride(k)));
  std::vector<float> sa(static_cast<size_t>(m));
  std::vector<int32_t> sums(
      static_cast<size_t>(m * internal::SumsRowStride(k / group) / 4));
  const internal::ActQuantArgs args{x.data(),  k * 2,     m,
                                    qa.data(), sa.data(), sums.data()};
  for (auto _ : state) {
    fn(&args);
    benchmark::ClobberMemory();
  }
  state.counters["x_B/s"] = benchmark::Counter(
      2.0 * m * k, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
  state.SetLabel((*gen)->name());
}

}  // namespace

void RegisterQuantizerBenchmarks() {
  std::set<int64_t> ks;
  for (const ModelPreset& preset : ModelPresets()) {
    for (const LayerShape& shape : preset.layers) ks.insert(shape.k);
  }
  for (int64_t k : ks) {
    benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
        absl::StrCat("ActQuantizer/K:", k).c_str(),
        [k](benchmark::State& state) { BM_ActQuantizer(state, k); });
    b->ArgName("M")->Unit(benchmark::kMicrosecond);
    for (int64_t m : BenchConfig().ms) b->Arg(m);
  }
}

}  // namespace w4jit::perf
