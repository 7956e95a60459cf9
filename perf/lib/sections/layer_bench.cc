#include "perf/lib/sections/layer_bench.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/ceilings/ceiling_probe.h"
#include "perf/lib/onednn_peer.h"
#include "perf/lib/output_check.h"
#include "perf/lib/report/row_metrics.h"
#include "perf/lib/timing/checked_timing.h"
#include "runtime/formats/import.h"
#include "runtime/kernel_cache.h"
#include "w4jit/layer.hpp"

namespace w4jit::perf {
namespace {

// One w4jit mode of the layer: the hot layer and, once needed, the copies
// that cold rows rotate through (all built from the same checkpoint).
struct ModeLayers {
  LayerDesc desc;
  const char* impl = "";
  std::vector<std::unique_ptr<Layer>> copies;  // [0] is the hot one
  absl::Status status;
  std::string kernel;
  int64_t bytes = 0;
  bool reference = false;
};

absl::StatusOr<std::unique_ptr<Layer>> CreateMeasured(const LayerDesc& desc,
                                                      const WeightsView& view,
                                                      LayerInfo* info) {
  const internal::KernelCacheStats before = internal::GetKernelCacheStats();
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<Layer>> layer = Layer::Create(desc, view);
  const auto t1 = std::chrono::steady_clock::now();
  const internal::KernelCacheStats after = internal::GetKernelCacheStats();
  info->create_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  info->jit_generations = after.generations - before.generations;
  info->jit_ms = after.total_generation_ms - before.total_generation_ms;
  return layer;
}

// Ceilings timed interleaved with the rows they judge, by basis ("bw 13.4
// MB read", "peak int8_avx2_i16"); built once per layer.
using ProbeCache = std::map<std::string, std::unique_ptr<CeilingProbe>>;

struct LayerContext {
  const LayersOptions& config;
  const LayerShape& shape;
  const internal::CanonicalWeights& weights;
  const WeightsView& view;
  BenchReport* report;
  ProbeCache* probes;
};

// Each probe run lasts about this long (or one pass over its buffer).
constexpr double kProbeSeconds = 2e-3;

// The probe with `basis`, made by `make` on first use; nullptr if it
// cannot be made (the rows then use the run's roofline).
const CeilingProbe* Probe(
    ProbeCache* cache, const std::string& basis,
    const std::function<absl::StatusOr<std::unique_ptr<CeilingProbe>>()>&
        make) {
  auto it = cache->find(basis);
  if (it == cache->end()) {
    absl::StatusOr<std::unique_ptr<CeilingProbe>> p = make();
    it = cache->emplace(basis, p.ok() ? *std::move(p) : nullptr).first;
  }
  return it->second.get();
}

// The basis of the ceiling a row is timed beside: the bound that binds it
// under the run's roofline (RowBounds), "bw <footprint> MB read" or
// "peak <key>"; "" if neither was measured.
std::string InterleavedBasis(const BenchRow& row, const Roofline& roof) {
  const RowBounds bounds = BoundsFor(row, roof);
  if (bounds.bound_us() <= 0) return "";
  return bounds.compute_binds()
             ? bounds.compute_basis
             : absl::StrFormat("bw %.1f MB read", row.footprint_bytes / 1e6);
}

// The ceiling probes for the w4jit rows at M: the read loop over their
// footprint where the memory bound binds, else the compute loop of the
// kernel's instruction.
std::vector<std::pair<std::string, const CeilingProbe*>> ProbesFor(
    const LayerContext& ctx, const std::vector<Contestant>& modes, int64_t m) {
  std::vector<std::pair<std::string, const CeilingProbe*>> out;
  for (const Contestant& c : modes) {
    if (!c.run) continue;
    BenchRow row;
    row.impl = c.impl;
    row.kernel = c.kernel;
    row.compute_op = c.compute_op;
    row.m = m;
    row.n = ctx.shape.n;
    row.k = ctx.shape.k;
    row.weight_bytes = c.weight_bytes;
    row.footprint_bytes = c.footprint_bytes;
    const Roofline& roof = ctx.report->roofline;
    const std::string basis = InterleavedBasis(row, roof);
    const CeilingProbe* probe = nullptr;
    if (absl::StartsWith(basis, "bw ")) {
      probe = Probe(ctx.probes, basis, [&] {
        return CeilingProbe::Read(c.footprint_bytes, kProbeSeconds);
      });
    } else if (const ComputePeak* peak =
                   roof.Peak(ComputePeakKeyFor(row, roof));
               !basis.empty() && peak != nullptr) {
      probe = Probe(ctx.probes, basis, [&] {
        return CeilingProbe::Compute(peak->op, kProbeSeconds);
      });
    }
    const bool seen = std::any_of(out.begin(), out.end(), [&](const auto& p) {
      return p.first == basis;
    });
    if (probe != nullptr && !seen) out.emplace_back(basis, probe);
  }
  return out;
}

// The contestant for one mode at M rows, rotating through `copies` layers.
Contestant ModeContestant(const LayerContext& ctx, ModeLayers& mode, int64_t m,
                          int copies, const uint16_t* x,
                          std::vector<uint16_t>* y, std::shared_ptr<int> next) {
  Contestant c;
  c.impl = mode.impl;
  c.kernel = mode.kernel;
  if (!mode.copies.empty()) {
    c.compute_op = ComputeOpKey(mode.copies.front()->compute_at(m));
  }
  c.weight_bytes = mode.bytes;
  c.footprint_bytes = mode.bytes * copies;
  if (!mode.status.ok()) {
    c.unavailable = RowStatus::kError;
    c.unavailable_note = std::string(mode.status.message());
    return c;
  }
  const double macs = static_cast<double>(m) * ctx.shape.n * ctx.shape.k;
  if (mode.reference && ctx.config.reference_max_macs > 0 &&
      macs > ctx.config.reference_max_macs) {
    c.unavailable = RowStatus::kNotAvailable;
    c.unavailable_note = absl::StrFormat(
        "n/a: reference path, not timed above %.3g MAC per call",
        ctx.config.reference_max_macs);
    return c;
  }
  const int64_t n = ctx.shape.n, k = ctx.shape.k;
  const auto* layers = &mode.copies;
  c.run = [=] {
    const int i = (*next)++ % copies;
    return (*layers)[i]->Run(m, x, k, y->data(), n);
  };
  const LayerDesc desc = mode.desc;
  const internal::CanonicalWeights* w = &ctx.weights;
  c.verify = [=] { return CheckLayerOutput(desc, *w, m, x, k, y->data(), n); };
  return c;
}

// A oneDNN peer at M rows with `copies` weight copies, kept alive in *keep.
Contestant PeerContestant(PeerKind kind, int64_t m, int64_t n, int64_t k,
                          int copies,
                          std::vector<std::unique_ptr<MatmulPeer>>* keep) {
  Contestant c;
  c.impl = PeerKey(kind);
  absl::StatusOr<std::unique_ptr<MatmulPeer>> peer =
      MatmulPeer::Create(kind, m, n, k, copies);
  if (!peer.ok()) {
    c.unavailable = absl::IsUnimplemented(peer.status())
                        ? RowStatus::kNotAvailable
                        : RowStatus::kError;
    c.unavailable_note = std::string(peer.status().message());
    return c;
  }
  MatmulPeer* p = peer->get();
  keep->push_back(*std::move(peer));
  c.kernel = absl::StrCat("oneDNN ", p->impl_name());
  c.compute_op = PeerComputeOp(c.impl, p->impl_name());
  c.weight_bytes = p->weight_bytes();
  c.footprint_bytes = p->weight_bytes() * copies;
  auto next = std::make_shared<int>(0);
  c.run = [p, next] { return p->Run((*next)++); };
  return c;
}

// Seconds one call of `impl` on this layer would take at M rows,
// extrapolated linearly from its largest hot M timed so far; 0 if none.
double EstimatedCallSeconds(const BenchReport& report, const std::string& layer,
                            const std::string& impl, int64_t m) {
  const BenchRow* last = nullptr;
  for (const BenchRow& row : report.rows) {
    if (row.layer == layer && row.impl == impl && !row.cold && row.ok() &&
        row.m < m && (last == nullptr || row.m > last->m)) {
      last = &row;
    }
  }
  if (last == nullptr) return 0.0;
  return last->time_us * 1e-6 * static_cast<double>(m) / last->m;
}

// Every M up to this is timed, however long a call takes.
constexpr int64_t kAlwaysTimedMaxM = 1024;

// Prefill shapes above kAlwaysTimedMaxM (M = 4096) where the budget
// allows: a contestant whose one call would take longer than the
// per-figure budget is n/a, not timed.
void SkipOverBudget(const LayerContext& ctx, int64_t m,
                    std::vector<Contestant>* contestants) {
  const double budget = ctx.config.timing.budget_s;
  if (m <= kAlwaysTimedMaxM) return;
  for (Contestant& c : *contestants) {
    if (!c.run || budget <= 0) continue;
    const double s =
        EstimatedCallSeconds(*ctx.report, ctx.shape.name, c.impl, m);
    if (s <= budget) continue;
    c.run = nullptr;
    c.verify = nullptr;
    c.unavailable = RowStatus::kNotAvailable;
    c.unavailable_note = absl::StrFormat(
        "not timed: one call would take ~%.2g s, over --budget %g s", s,
        budget);
  }
}

// Checks and times every mode and peer at M rows, hot or cold.
void TimeShape(const LayerContext& ctx, std::vector<ModeLayers>& modes,
               int64_t m, bool cold) {
  const LayersOptions& config = ctx.config;
  const int64_t n = ctx.shape.n, k = ctx.shape.k;
  const int64_t llc = std::max<int64_t>(ctx.report->cpu.l3_bytes, 1 << 20);
  const std::vector<uint16_t> x =
      BenchActivations(m, k, 0xAC7ull + static_cast<uint64_t>(m));
  std::vector<std::vector<uint16_t>> ys(
      modes.size(), std::vector<uint16_t>(static_cast<size_t>(m * n)));
  std::vector<Contestant> contestants;
  for (size_t i = 0; i < modes.size(); ++i) {
    const int copies = cold ? static_cast<int>(modes[i].copies.size()) : 1;
    contestants.push_back(ModeContestant(ctx, modes[i], m, copies, x.data(),
                                         &ys[i], std::make_shared<int>(0)));
  }
  if (!cold) SkipOverBudget(ctx, m, &contestants);
  // Ceilings, timed as contestants of their own (impl "ceiling").
  const auto probes = ProbesFor(ctx, contestants, m);
  for (const auto& [basis, probe] : probes) {
    Contestant c;
    c.impl = "ceiling";
    c.kernel = basis;
    c.run = [p = probe] {
      p->RunShared();
      return absl::OkStatus();
    };
    contestants.push_back(std::move(c));
  }
  std::vector<std::unique_ptr<MatmulPeer>> peers;
  if (config.peers) {
    for (PeerKind kind : {PeerKind::kBf16, PeerKind::kU8S8}) {
      const int64_t bytes = n * k * (kind == PeerKind::kBf16 ? 2 : 1);
      contestants.push_back(PeerContestant(
          kind, m, n, k, cold ? ColdCopies(bytes, llc) : 1, &peers));
    }
    if (!cold) SkipOverBudget(ctx, m, &contestants);
  }
  BenchRow shape;
  shape.layer = ctx.shape.name;
  shape.n = n;
  shape.k = k;
  shape.group_size = ctx.shape.group_size;
  shape.m = m;
  shape.cold = cold;
  std::vector<BenchRow> rows =
      TimeCheckedContestants(shape, contestants, config.timing);
  // Ceiling rates by basis, from the probe rows (which are not reported).
  std::map<std::string, double> ceilings;
  for (const BenchRow& row : rows) {
    if (row.impl != "ceiling" || !row.ok() || row.time_us <= 0) continue;
    for (const auto& [basis, probe] : probes) {
      if (basis == row.kernel) {
        ceilings[basis] = probe->units_per_run() / (row.time_us * 1e-6);
      }
    }
  }
  for (BenchRow& row : rows) {
    if (row.impl == "ceiling") continue;
    if (cold) {
      row.cold_copies = static_cast<int>(
          row.footprint_bytes / std::max<int64_t>(1, row.weight_bytes));
    }
    const bool mode = row.impl == kImplW4a16 || row.impl == kImplDa8w4;
    const std::string basis = InterleavedBasis(row, ctx.report->roofline);
    if (mode && ceilings.count(basis) > 0) {
      row.ceiling_rate = ceilings[basis];
      row.ceiling_basis = basis;
    }
    ctx.report->rows.push_back(std::move(row));
  }
}

}  // namespace

int ColdCopies(int64_t bytes, int64_t llc_bytes) {
  if (bytes <= 0) return 2;
  const int64_t want = (2 * llc_bytes + bytes - 1) / bytes;
  return static_cast<int>(std::clamp<int64_t>(want, 2, 64));
}

absl::Status BenchOneLayer(const LayersOptions& config, const LayerShape& shape,
                           const std::function<void(const std::string&)>& say,
                           BenchReport* report) {
  say(absl::StrFormat("layer %s: N=%d K=%d group %d%s", shape.name, shape.n,
                      shape.k, shape.group_size,
                      shape.has_bias ? " bias" : ""));
  // One set of canonical weights and one checkpoint for every mode and copy.
  const LayerDesc base = BenchDesc(shape, Mode::kW4A16, config.weight_type);
  const internal::CanonicalWeights w = BenchWeights(base, 0x5EEDull);
  absl::StatusOr<internal::OwnedCheckpoint> ckpt =
      internal::ExportWeights(base, w, WeightFormat::kUnpackedInt8);
  if (!ckpt.ok()) return ckpt.status();
  const WeightsView view = ckpt->view();
  ProbeCache probes;
  const LayerContext ctx{config, shape, w, view, report, &probes};

  std::vector<ModeLayers> modes;
  for (Mode mode : config.modes) {
    ModeLayers ml;
    ml.desc = BenchDesc(shape, mode, config.weight_type);
    ml.impl = mode == Mode::kW4A16 ? kImplW4a16 : kImplDa8w4;
    LayerInfo info;
    info.impl = ml.impl;
    info.layer = shape.name;
    info.n = shape.n;
    info.k = shape.k;
    info.group_size = shape.group_size;
    absl::StatusOr<std::unique_ptr<Layer>> layer =
        CreateMeasured(ml.desc, view, &info);
    if (layer.ok()) {
      ml.bytes = static_cast<int64_t>((*layer)->packed_bytes());
      ml.kernel = absl::StrJoin((*layer)->kernel_names(), "+");
      ml.reference = absl::StartsWith(ml.kernel, "reference");
      ml.copies.push_back(*std::move(layer));
      info.packed_bytes = ml.bytes;
      info.kernel = ml.kernel;
      if (absl::Status s =
              AddBandwidthFor(ml.bytes, absl::StrCat(shape.name, " weights"),
                              config.roofline, &report->roofline);
          !s.ok()) {
        return s;
      }
    } else {
      ml.status = layer.status();
    }
    say(absl::StrFormat("  %s: %s (%.1f MB, created in %.0f ms, JIT %.1f ms)",
                        ml.impl,
                        ml.status.ok() ? ml.kernel : ml.status.ToString(),
                        ml.bytes / 1e6, info.create_ms, info.jit_ms));
    report->layers.push_back(info);
    modes.push_back(std::move(ml));
  }

  for (int64_t m : config.ms) {
    say(absl::StrFormat("  M=%d hot", m));
    TimeShape(ctx, modes, m, /*cold=*/false);
  }
  const int64_t llc = std::max<int64_t>(report->cpu.l3_bytes, 1 << 20);
  bool cold_ready = false;
  for (int64_t m : config.ms) {
    if (m > config.cold_max_m) continue;
    if (!cold_ready) {
      for (ModeLayers& ml : modes) {
        if (!ml.status.ok()) continue;
        const int copies = ColdCopies(ml.bytes, llc);
        while (static_cast<int>(ml.copies.size()) < copies) {
          absl::StatusOr<std::unique_ptr<Layer>> copy =
              Layer::Create(ml.desc, view);
          if (!copy.ok()) return copy.status();
          ml.copies.push_back(*std::move(copy));
        }
        if (absl::Status s = AddBandwidthFor(
                ml.bytes * copies, absl::StrCat("cold ", copies, " copies"),
                config.roofline, &report->roofline);
            !s.ok()) {
          return s;
        }
      }
      cold_ready = true;
    }
    say(absl::StrFormat("  M=%d cold", m));
    TimeShape(ctx, modes, m, /*cold=*/true);
  }
  return absl::OkStatus();
}

}  // namespace w4jit::perf
