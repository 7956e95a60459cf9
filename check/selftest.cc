#include "check/selftest.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <numeric>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "check/case_fields.h"
#include "check/draw_util.h"
#include "check/layer_check.h"
#include "check/moe_selftest.h"
#include "dispatch/isa_traits.h"
#include "dispatch/kernel_key.h"
#include "runtime/formats/import.h"
#include "w4jit/layer.hpp"
#include "w4jit/parallel.hpp"

namespace w4jit::check {
namespace {

using internal::IsaTier;

// A host framework's backend, as simple as one can be: a fresh thread per
// chunk slot on every Run (so per-thread scratch is new every time too).
class ThreadPerChunkBackend final : public ParallelBackend {
 public:
  explicit ThreadPerChunkBackend(int threads)
      : threads_(std::max(1, threads)) {}
  int concurrency() const override { return threads_; }
  void Run(int num_chunks, const std::function<void(int)>& fn) override {
    std::atomic<int> next{0};
    auto drain = [&] {
      for (int c = next.fetch_add(1); c < num_chunks; c = next.fetch_add(1)) {
        fn(c);
      }
    };
    std::vector<std::thread> helpers;
    for (int i = 1; i < std::min(threads_, num_chunks); ++i) {
      helpers.emplace_back(drain);
    }
    drain();
    for (auto& t : helpers) t.join();
  }

 private:
  const int threads_;
};

// Every backend selftest covers: a name and how to make it run the next
// layers with `threads` threads. A new backend is one more line.
struct BackendEntry {
  const char* name;
  void (*install)(int threads);
};
constexpr BackendEntry kBackends[] = {
    {"pool",
     [](int threads) {
       SetParallelBackend(nullptr);
       (void)SetThreadingBackend(ThreadingBackend::kPool);
       SetNumThreads(threads);
     }},
    // Only listed when w4jit was built with OpenMP (OpenMpAvailable).
    {"omp",
     [](int threads) {
       SetParallelBackend(nullptr);
       (void)SetThreadingBackend(ThreadingBackend::kOpenMP);
       SetNumThreads(threads);
     }},
    {"host",
     [](int threads) {
       SetParallelBackend(std::make_shared<ThreadPerChunkBackend>(threads));
     }},
};

const BackendEntry* FindBackend(const std::string& name) {
  for (const BackendEntry& b : kBackends) {
    if (name == b.name) return &b;
  }
  return nullptr;
}

// The process's threading choice when selftest started (W4JIT_THREADING or
// the host's call), put back when it ends.
void RestoreThreading(ThreadingBackend before) {
  SetParallelBackend(nullptr);
  (void)SetThreadingBackend(before);
  SetNumThreads(0);
}

// Whether this build has the OpenMP backend: setting it fails otherwise.
bool OpenMpAvailable() {
  const ThreadingBackend before = GetThreadingBackend();
  const bool ok = SetThreadingBackend(ThreadingBackend::kOpenMP).ok();
  (void)SetThreadingBackend(before);
  return ok;
}

int AvailableThreads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

constexpr int64_t kMacBudget = int64_t{1} << 21;  // M * N * K per case

}  // namespace

bool KnownSelftestBackend(const std::string& name) {
  return FindBackend(name) != nullptr;
}

bool InstallSelftestBackend(const std::string& name, int threads) {
  const BackendEntry* backend = FindBackend(name);
  if (backend == nullptr) return false;
  backend->install(threads);
  return true;
}

std::vector<std::string> SelftestBackends() {
  std::vector<std::string> names;
  for (const BackendEntry& b : kBackends) {
    if (std::string(b.name) == "omp" && !OpenMpAvailable()) continue;
    names.push_back(b.name);
  }
  return names;
}

std::string CaseToString(const Case& c) {
  const LayerDesc& d = c.desc;
  return absl::StrFormat(
             "isa=%s,mode=%s,n=%d,k=%d,group=%d,weights=%s,format=%s,"
             "groups_major=%d,scales=%s,act=%s,out=%s,bias=%s,bf16_compute=%d,"
             "m=%d,ldx=%d,ldy=%d,threads=%d,backend=%s,wseed=%u,xseed=%u,"
             "act_order=%d,ep=%u",
             internal::ToString(c.isa), ToString(d.mode), d.n, d.k,
             d.group_size, ToString(d.weight_type), ToString(c.format),
             c.groups_major ? 1 : 0, ToString(d.scale_dtype),
             ToString(d.act_dtype), ToString(d.out_dtype),
             d.has_bias ? ToString(d.bias_dtype) : "none",
             d.allow_bf16_compute ? 1 : 0, c.m, c.ldx, c.ldy, c.threads,
             c.backend, c.weight_seed, c.x_seed, c.act_order ? 1 : 0,
             internal::EpilogueCode(d.epilogue)) +
         // Only when not the default, so older case strings still match.
         (d.act_quant == ActQuant::kPerToken
              ? std::string()
              : absl::StrCat(",act_quant=", ToString(d.act_quant)));
}

absl::StatusOr<Case> ParseCase(const std::string& text) {
  Case c;
  LayerDesc& d = c.desc;
  absl::StatusOr<std::map<std::string, std::string>> fields = CaseFields(text);
  if (!fields.ok()) return fields.status();
  const CommonFields common{
      &c.isa,         &d.mode,        &d.act_quant,
      &d.weight_type, &c.format,      &d.scale_dtype,
      &d.act_dtype,   &d.out_dtype,   &d.allow_bf16_compute,
      &c.ldx,         &c.ldy,         &c.threads,
      &c.backend,     &c.weight_seed, &c.x_seed};
  const std::initializer_list<DType> dtypes = {DType::kF32, DType::kBF16,
                                               DType::kF16};
  for (const auto& [name, value] : *fields) {
    if (name == "format" &&
        value == ToString(WeightFormat::kTinygemmInt4Pack)) {
      c.format = WeightFormat::kTinygemmInt4Pack;
      continue;
    }
    const FieldParse shared = ParseCommonField(name, value, common);
    if (shared == FieldParse::kBad) return BadCaseField(name, value);
    if (shared == FieldParse::kOk) continue;
    int64_t num = 0;
    const bool is_num = absl::SimpleAtoi(value, &num);
    bool ok = true;
    if (name == "zp") {
      // "integer", or the dtype of float zero points.
      d.zero_point_domain = value == "integer" ? ZeroPointDomain::kInteger
                                               : ZeroPointDomain::kFloat;
      ok = value == "integer" ||
           ParseEnum(value, {DType::kBF16, DType::kF32}, &d.zero_point_dtype);
    } else if (name == "bias") {
      d.has_bias = value != "none";
      ok = !d.has_bias || ParseEnum(value, dtypes, &d.bias_dtype);
    } else if (!is_num) {
      ok = false;
    } else if (name == "n") {
      d.n = num;
    } else if (name == "k") {
      d.k = num;
    } else if (name == "group") {
      d.group_size = num;
    } else if (name == "groups_major") {
      c.groups_major = num != 0;
    } else if (name == "m") {
      c.m = num;
    } else if (name == "act_order") {
      c.act_order = num != 0;
    } else if (name == "ep") {
      // EpilogueCode bits (dispatch/kernel_key.h); validated by Create.
      d.epilogue = internal::EpilogueFromCode(static_cast<uint32_t>(num));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown case field '", name, "'"));
    }
    if (!ok) return BadCaseField(name, value);
  }
  if (c.ldx == 0) c.ldx = d.k;
  if (c.ldy == 0) c.ldy = d.n;
  return c;
}

Case RandomCase(std::mt19937_64* rng, IsaTier isa, int max_threads,
                const std::vector<std::string>& backends) {
  static constexpr WeightFormat kFormats[] = {WeightFormat::kUnpackedInt8,
                                              WeightFormat::kZentorchInt32,
                                              WeightFormat::kCompressedTensors,
                                              WeightFormat::kGptqV1,
                                              WeightFormat::kGptqV2,
                                              WeightFormat::kAwqGemm};
  static constexpr DType kScaleTypes[] = {DType::kF32, DType::kBF16,
                                          DType::kF16};
  static constexpr DType kIoTypes[] = {DType::kBF16, DType::kF32};
  // Even and odd groups, multiples of 4 and not, short and long.
  static constexpr int64_t kGroups[] = {1,  2,  3,  4,   5,   6,   7,   8,
                                        9,  12, 16, 20,  24,  28,  32,  33,
                                        48, 64, 96, 100, 128, 160, 256, 512};
  Case c;
  c.isa = isa;
  LayerDesc& d = c.desc;
  d.mode = Coin(rng) ? Mode::kW4A16 : Mode::kDA8W4;
  d.weight_type = Coin(rng) ? WeightType::kS4 : WeightType::kU4;
  c.format = Pick(rng, kFormats);
  c.groups_major = Coin(rng);
  d.scale_dtype = Pick(rng, kScaleTypes);
  d.act_dtype = Pick(rng, kIoTypes);
  d.out_dtype = Pick(rng, kIoTypes);
  d.has_bias = Coin(rng);
  d.bias_dtype =
      Pick(rng, kIoTypes) == DType::kF32 ? DType::kF32 : DType::kBF16;
  d.allow_bf16_compute =
      d.mode == Mode::kW4A16 && d.act_dtype == DType::kF32 && Coin(rng, 0.3);

  // M: decode sizes most often, every tile tail (the register tiles are at
  // most 16 rows, the panel M blocks 96) up to a few hundred.
  const int64_t r = Uniform(rng, 0, 99);
  c.m = r < 40 ? Uniform(rng, 1, 16)
               : (r < 70 ? Uniform(rng, 17, 64) : Uniform(rng, 65, 320));
  const int64_t nk_budget = kMacBudget / c.m;
  const int64_t k_cap = std::clamp<int64_t>(nk_budget / 8, 8, 2048);

  // K and the group: per-channel, or a group from the list times a count.
  const bool k8 = NeedsK8(c.format);
  if (Coin(rng, 0.15)) {
    d.group_size = -1;
    d.k = Uniform(rng, 1, k_cap);
    if (k8) d.k = RoundUp(d.k, 8);
  } else {
    d.group_size = Pick(rng, kGroups);
    int64_t groups =
        Uniform(rng, 1, std::max<int64_t>(1, k_cap / d.group_size));
    if (k8) groups = RoundUp(groups, 8 / std::gcd(d.group_size, int64_t{8}));
    d.k = d.group_size * groups;
  }
  d.n = Uniform(rng, 1, std::clamp<int64_t>(nk_budget / d.k, 1, 320));
  if (NeedsN8(c.format, d.weight_type)) d.n = RoundUp(d.n, 8);

  c.ldx = d.k + (Coin(rng) ? 0 : Uniform(rng, 1, 19));
  c.ldy = d.n + (Coin(rng) ? 0 : Uniform(rng, 1, 19));
  c.threads = static_cast<int>(Uniform(rng, 1, std::max(1, max_threads)));
  c.backend = backends.empty() ? "pool"
                               : backends[static_cast<size_t>(Uniform(
                                     rng, 0, int64_t(backends.size()) - 1))];
  c.weight_seed = static_cast<uint32_t>((*rng)());
  c.x_seed = static_cast<uint32_t>((*rng)());
  // Act-order where the format carries a g_idx and K has groups to permute.
  c.act_order =
      c.format != WeightFormat::kAwqGemm && d.groups() > 1 && Coin(rng, 0.3);
  // A fused epilogue in a third of the cases (drawn last, so the rest of a
  // seed's draw is what it was before epilogues existed).
  if (Coin(rng, 0.35)) {
    Epilogue& e = d.epilogue;
    e.silu_mul = d.n % 2 == 0 && Coin(rng, 0.3);
    if (!e.silu_mul) e.activation = static_cast<Activation>(Uniform(rng, 0, 5));
    e.num_binary = static_cast<int>(Uniform(rng, 0, 2));
    for (int i = 0; i < e.num_binary; ++i) {
      e.binary[i].op = Coin(rng) ? BinaryOp::kMul : BinaryOp::kAdd;
      e.binary[i].dtype = Coin(rng) ? DType::kBF16 : DType::kF32;
    }
  }
  // DA8W4 activation scales per group in half the DA8W4 cases (drawn after
  // everything else, for the same reason).
  if (d.mode == Mode::kDA8W4 && Coin(rng)) d.act_quant = ActQuant::kPerGroup;
  // Float zero points (torchao's tinygemm form) for a third of the W4A16
  // u4 cases, drawn after everything else for the same reason; in the
  // tinygemm-int4pack format (N a multiple of 16, so that the last 64-row
  // block is often a tail; no g_idx) where K is
  // even and a coin says so, else beside unpacked or zentorch weights.
  if (d.mode == Mode::kW4A16 && d.weight_type == WeightType::kU4 &&
      Coin(rng, 0.33)) {
    d.zero_point_domain = ZeroPointDomain::kFloat;
    d.zero_point_dtype = Coin(rng) ? DType::kBF16 : DType::kF32;
    if (d.k % 2 == 0 && Coin(rng, 0.5)) {
      c.format = WeightFormat::kTinygemmInt4Pack;
      d.n = RoundUp(d.n, 16);
      c.ldy = d.n + (c.ldy > 0 ? c.ldy % 7 : 0);
      c.act_order = false;
    } else if (c.format != WeightFormat::kZentorchInt32) {
      c.format = WeightFormat::kUnpackedInt8;
    }
  }
  return c;
}

CaseResult RunCase(const Case& c) {
  CaseResult result;
  if (!InstallSelftestBackend(c.backend, c.threads)) {
    result.error = absl::StrCat("unknown backend ", c.backend);
    return result;
  }
  internal::ScopedIsaCap cap(c.isa);
  const LayerDesc& d = c.desc;
  internal::CanonicalWeights w = RandomWeights(d, c.weight_seed);
  if (c.act_order) w.k_perm = RandomActOrder(d, c.weight_seed + 1);
  absl::StatusOr<internal::OwnedCheckpoint> ckpt =
      internal::ExportWeights(d, w, c.format, c.groups_major);
  if (!ckpt.ok()) {
    result.error = absl::StrCat("export: ", ckpt.status().ToString());
    return result;
  }
  absl::StatusOr<std::unique_ptr<Layer>> layer = Layer::Create(d, ckpt->view());
  if (!layer.ok()) {
    result.error = absl::StrCat("Layer::Create: ", layer.status().ToString());
    return result;
  }
  const std::vector<std::string> names = (*layer)->kernel_names();
  result.on_jit = !names.empty() && names[0].rfind("reference", 0) != 0;
  const std::vector<uint8_t> x = RandomActivations(d, c.m, c.ldx, c.x_seed);
  const EpilogueOperands ops =
      RandomEpilogueOperands(d, c.m, /*pad=*/3, c.x_seed + 1);
  const CheckResult r =
      CheckRun(**layer, w, c.m, x.data(), c.ldx, c.ldy, nullptr, &ops);
  result.ok = r.ok();
  result.worst_ratio = r.worst_ratio;
  if (!r.ok()) {
    result.error = absl::StrCat(r.bad, " bad outputs (kernels: ",
                                absl::StrJoin(names, " "), "):\n", r.report);
  }
  return result;
}

std::vector<IsaTier> SupportedTiers() {
  std::vector<IsaTier> tiers;
  const IsaTier top = internal::ActiveIsa();
  for (const internal::IsaTraits& t : internal::kIsaTraits) {
    if (internal::HasFeaturesOf(top, t.tier)) tiers.push_back(t.tier);
  }
  return tiers;
}

SelftestReport RunSelftest(
    const SelftestOptions& options,
    const std::function<void(const Progress&)>& progress) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const ThreadingBackend threading_before = GetThreadingBackend();
  auto elapsed = [&] {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const std::vector<IsaTier> tiers =
      options.tiers.empty() ? SupportedTiers() : options.tiers;
  const std::vector<std::string> backends =
      options.backends.empty() ? SelftestBackends() : options.backends;
  const int max_threads =
      options.max_threads > 0 ? options.max_threads : AvailableThreads();
  constexpr size_t kMaxReported = 20;

  SelftestReport report;
  for (size_t ti = 0; ti < tiers.size(); ++ti) {
    const IsaTier tier = tiers[ti];
    // This tier's share of what is left, so a fast tier leaves its time to
    // the ones after it.
    const double deadline =
        elapsed() + (options.seconds - elapsed()) / (tiers.size() - ti);
    std::seed_seq seq{options.seed, static_cast<uint64_t>(tier)};
    std::mt19937_64 rng(seq);
    std::seed_seq moe_seq{options.seed, static_cast<uint64_t>(tier),
                          uint64_t{0x6d6f65}};
    std::mt19937_64 moe_rng(moe_seq);
    TierModeStats per_kind[4];
    for (int i = 0; i < 4; ++i) {
      per_kind[i].tier = tier;
      per_kind[i].moe = i >= 2;
      per_kind[i].mode = static_cast<Mode>(i % 2);
    }
    for (int64_t i = 0; i < options.configs_per_tier && elapsed() < deadline;
         ++i) {
      std::string text;
      CaseResult r;
      Mode mode;
      const bool moe = i % kMoeEvery == kMoeEvery - 1;
      if (moe) {
        const MoeCase c = RandomMoeCase(&moe_rng, tier, max_threads, backends);
        r = RunMoeCase(c);
        text = MoeCaseToString(c);
        mode = c.desc.mode;
      } else {
        const Case c = RandomCase(&rng, tier, max_threads, backends);
        r = RunCase(c);
        text = CaseToString(c);
        mode = c.desc.mode;
      }
      TierModeStats& s = per_kind[static_cast<int>(mode) + (moe ? 2 : 0)];
      ++s.configs;
      s.on_jit += r.on_jit ? 1 : 0;
      s.worst_ratio = std::max(s.worst_ratio, r.worst_ratio);
      if (!r.ok) {
        ++s.failed;
        ++report.total_failed;
        if (report.failures.size() < kMaxReported) {
          report.failures.push_back(absl::StrCat(text, "\n  ", r.error));
        }
      }
      if (progress) {
        progress(Progress{tier, i + 1, options.configs_per_tier,
                          report.total_failed, elapsed()});
      }
    }
    for (const TierModeStats& s : per_kind) report.stats.push_back(s);
  }
  RestoreThreading(threading_before);
  report.seconds = elapsed();
  return report;
}

std::string FormatSummary(const SelftestReport& report) {
  std::string out =
      absl::StrFormat("%-12s %-6s %-6s %8s %7s %8s %14s\n", "tier", "layer",
                      "mode", "configs", "failed", "on JIT", "worst err/tol");
  for (const TierModeStats& s : report.stats) {
    absl::StrAppendFormat(&out, "%-12s %-6s %-6s %8d %7d %8d %14.3f\n",
                          internal::ToString(s.tier), s.moe ? "moe" : "linear",
                          ToString(s.mode), s.configs, s.failed, s.on_jit,
                          s.worst_ratio);
  }
  return out;
}

}  // namespace w4jit::check
