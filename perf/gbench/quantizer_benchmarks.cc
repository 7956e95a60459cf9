// The DA8W4 activation quantizer alone, for each distinct K of the presets
// (group 128) and the bench's M values: it must stay negligible next to
// the GEMM (docs/isa-paths.md). "/act_order" variants gather x
// through a GPTQ act-order permutation (bf16 and f32), beside the W4A16
// x packing with and without it: together, the whole run-time cost of
// act-order in either mode. Da8w4PanelDecode times the large-M path's
// per-panel decode, JIT against the portable reference, on one L2-sized
// panel.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/numeric.h"
#include "benchmark/benchmark.h"
#include "check/layer_check.h"
#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "jit/act_quantizer_generator.h"
#include "perf/gbench/registry.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/bench_options.h"
#include "runtime/da8w4/da8w4_decode.h"
#include "runtime/da8w4/da8w4_kernel_lookup.h"
#include "runtime/da8w4/da8w4_pack.h"
#include "runtime/w4a16/w4a16_pack.h"

namespace w4jit::perf {
namespace {

LayerDesc ActOrderDesc(int64_t k, int64_t group) {
  LayerDesc d;
  d.k = k;
  d.group_size = group;
  return d;
}

void BM_ActQuantizer(benchmark::State& state, int64_t k, DType dtype,
                     bool act_order) {
  const int64_t m = state.range(0), group = 128;
  const internal::IsaTier isa = internal::ActiveIsa();
  if (internal::TraitsOf(isa).vector_bytes == 0) {
    state.SkipWithError("no JIT ISA on this CPU");
    return;
  }
  internal::ActQuantConfig config;
  config.isa = isa;
  config.act_dtype = dtype;
  config.k = k;
  config.group_size = group;
  config.permuted = act_order;
  absl::StatusOr<std::shared_ptr<const internal::Generator>> gen =
      internal::GetActQuantizer(config);
  if (!gen.ok()) {
    state.SkipWithError(std::string(gen.status().message()).c_str());
    return;
  }
  const auto fn = (*gen)->entry<internal::ActQuantFn>();
  // f32 rows: the bf16 values widened (same magnitudes).
  const std::vector<uint16_t> xb = BenchActivations(m, k, 3);
  std::vector<float> xf;
  if (dtype == DType::kF32) {
    for (uint16_t v : xb) xf.push_back(internal::Bf16ToF32(v));
  }
  const void* x = dtype == DType::kF32 ? static_cast<const void*>(xf.data())
                                       : static_cast<const void*>(xb.data());
  const int64_t esize = dtype == DType::kF32 ? 4 : 2;
  std::vector<int32_t> table;
  if (act_order) {
    table = check::RandomActOrder(ActOrderDesc(k, group), 5);
    table.resize(table.size() + internal::kActOrderTablePad, 0);
  }
  std::vector<int8_t> qa(static_cast<size_t>(m * internal::QaRowStride(k)));
  std::vector<float> sa(static_cast<size_t>(m));
  std::vector<int32_t> sums(
      static_cast<size_t>(m * internal::SumsRowStride(k / group) / 4));
  const internal::ActQuantArgs args{x,
                                    k * esize,
                                    m,
                                    qa.data(),
                                    sa.data(),
                                    sums.data(),
                                    act_order ? table.data() : nullptr};
  for (auto _ : state) {
    fn(&args);
    benchmark::ClobberMemory();
  }
  state.counters["x_B/s"] =
      benchmark::Counter(static_cast<double>(esize * m * k),
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  state.SetLabel((*gen)->name());
}

// W4A16's per-call packing of x (bf16 rows) into the kernels' f32 rows,
// plain or through the act-order permutation.
void BM_W4a16PackX(benchmark::State& state, int64_t k, bool act_order) {
  const int64_t m = state.range(0);
  // AVX2's int4 kernel (s4, group 128) and panel rows and tile heights.
  const bool int4 = m < 8;
  const int mr = int4 ? 2 : 6;
  const internal::F32Int4RowSlots slots = internal::F32Int4Slots(false, false);
  const std::vector<uint16_t> x = BenchActivations(m, k, 3);
  std::vector<float> out(static_cast<size_t>(
      m * internal::PackedF32Int4RowElements(k, 128, slots)));
  const std::vector<int32_t> perm =
      act_order ? check::RandomActOrder(ActOrderDesc(k, 128), 5)
                : std::vector<int32_t>();
  const int32_t* k_perm = act_order ? perm.data() : nullptr;
  for (auto _ : state) {
    if (int4) {
      internal::PackRowsF32Int4(x.data(), DType::kBF16, k, m, k, mr, out.data(),
                                k_perm, 128, slots);
    } else {
      internal::PackRowsF32(x.data(), DType::kBF16, k, m, k, mr, out.data(),
                            k_perm);
    }
    benchmark::ClobberMemory();
  }
  state.counters["x_B/s"] = benchmark::Counter(
      2.0 * m * k, benchmark::Counter::kIsIterationInvariantRate,
      benchmark::Counter::kIs1000);
}

// One decoded panel of the large-M DA8W4 path: `blocks` column blocks of
// K = k, as a thread decodes it before its row tiles run.
void BM_Da8w4PanelDecode(benchmark::State& state, int64_t k, bool jit) {
  const int64_t blocks = state.range(0);
  const internal::IsaTier isa = internal::ActiveIsa();
  if (internal::TraitsOf(isa).vector_bytes == 0) {
    state.SkipWithError("no JIT ISA on this CPU");
    return;
  }
  internal::Da8w4Packed packed;
  packed.layout.lanes = internal::TraitsOf(isa).lanes32();
  packed.layout.n = blocks * packed.layout.block_cols();
  packed.layout.k = k;
  packed.layout.group_size = k;
  const internal::Da8w4Layout& lay = packed.layout;
  packed.weights.assign(static_cast<size_t>(blocks * lay.block_weight_bytes()),
                        0x5A);
  std::vector<uint8_t> panel(
      static_cast<size_t>(blocks * lay.decoded_block_bytes()));
  absl::StatusOr<std::shared_ptr<const internal::Generator>> gen =
      internal::GetDa8w4DecodeKernel(isa);
  if (!gen.ok()) {
    state.SkipWithError(std::string(gen.status().message()).c_str());
    return;
  }
  const auto fn = (*gen)->entry<internal::Da8w4DecodeFn>();
  const internal::Da8w4DecodeArgs args{packed.weights.data(), panel.data(),
                                       blocks * lay.k_quads()};
  for (auto _ : state) {
    if (jit) {
      fn(&args);
    } else {
      internal::DecodeDa8w4Blocks(packed, 0, blocks, panel.data());
    }
    benchmark::ClobberMemory();
  }
  state.counters["w_B/s"] =
      benchmark::Counter(static_cast<double>(packed.weights.size()),
                         benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  state.SetLabel(jit ? (*gen)->name() : "portable");
}

}  // namespace

void RegisterQuantizerBenchmarks() {
  for (int64_t k : {4096, 14336}) {
    for (bool jit : {false, true}) {
      benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
          absl::StrCat("Da8w4PanelDecode/K:", k, jit ? "/jit" : "/portable")
              .c_str(),
          [=](benchmark::State& state) { BM_Da8w4PanelDecode(state, k, jit); });
      b->ArgName("blocks")->Unit(benchmark::kMicrosecond);
      b->Arg(1)->Arg(4);
    }
  }
  std::set<int64_t> ks;
  for (const ModelPreset& preset : ModelPresets()) {
    for (const LayerShape& shape : preset.layers) ks.insert(shape.k);
  }
  for (int64_t k : ks) {
    for (DType dtype : {DType::kBF16, DType::kF32}) {
      for (bool act_order : {false, true}) {
        // bf16 is what the layer benchmarks run; f32 only for act-order.
        if (dtype == DType::kF32 && !act_order) continue;
        benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
            absl::StrCat("ActQuantizer/K:", k,
                         dtype == DType::kF32 ? "/f32" : "",
                         act_order ? "/act_order" : "")
                .c_str(),
            [=](benchmark::State& state) {
              BM_ActQuantizer(state, k, dtype, act_order);
            });
        b->ArgName("M")->Unit(benchmark::kMicrosecond);
        for (int64_t m : LayersOptions().ms) b->Arg(m);
      }
    }
    for (bool act_order : {false, true}) {
      benchmark::internal::Benchmark* b = benchmark::RegisterBenchmark(
          absl::StrCat("W4a16PackX/K:", k, act_order ? "/act_order" : "")
              .c_str(),
          [=](benchmark::State& state) { BM_W4a16PackX(state, k, act_order); });
      b->ArgName("M")->Unit(benchmark::kMicrosecond);
      for (int64_t m : LayersOptions().ms) b->Arg(m);
    }
  }
}

}  // namespace w4jit::perf
