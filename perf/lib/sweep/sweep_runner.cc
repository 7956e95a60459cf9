#include "perf/lib/sweep/sweep_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "dispatch/cpu_profile.h"
#include "perf/lib/bench_data.h"
#include "perf/lib/output_check.h"
#include "perf/lib/sections/layer_bench.h"
#include "perf/lib/sweep/sweep_candidates.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/w4a16/w4a16_params.h"
#include "w4jit/parallel.hpp"

namespace w4jit::perf {
namespace {

using internal::CanonicalWeights;
using internal::LinearKernel;
using internal::ParamMap;
using Clock = std::chrono::steady_clock;

// One candidate's kernels, all built with the same parameters: one, or
// (when some of its M values are timed cold) enough copies of the packed
// weights that rotating through them streams the weights from DRAM.
struct Candidate {
  std::vector<std::unique_ptr<LinearKernel>> copies;
  const LinearKernel* first() const {
    return copies.empty() ? nullptr : copies[0].get();
  }
};

// One layer and mode under test: its data and the defaults' kernels.
struct Subject {
  LayerDesc desc;
  LayerShape shape;
  CanonicalWeights w;
  std::vector<uint16_t> x;  // max M rows of bf16
  std::vector<uint16_t> y;  // max M rows of bf16 output
  Candidate defaults;
  int cold_copies = 1;  // copies a cold candidate gets
};

SweepPoint PointFor(const Subject& s, int64_t m) {
  SweepPoint p;
  p.mode = s.desc.mode;
  p.layer = s.shape.name;
  p.n = s.desc.n;
  p.k = s.desc.k;
  p.group_size = s.desc.group_size;
  p.m = m;
  return p;
}

CandidateRow RowFor(const Subject& s, int64_t m, const std::string& group,
                    const ParamMap& params) {
  CandidateRow r;
  static_cast<SweepPoint&>(r) = PointFor(s, m);
  r.group = group;
  r.params = ParamsToString(params);
  return r;
}

// Runs `kernel` at M and checks it against the reference definition.
absl::Status RunAndVerify(Subject& s, const LinearKernel& kernel, int64_t m) {
  kernel.Run({m, s.x.data(), s.desc.k, s.y.data(), s.desc.n});
  return CheckLayerOutput(s.desc, s.w, m, s.x.data(), s.desc.k, s.y.data(),
                          s.desc.n);
}

// Verifies every candidate at M, then times the correct ones interleaved,
// cold ones rotating through their copies. Returns median microseconds per
// candidate (0: not timed) and fills rows.
std::vector<double> VerifyAndTime(Subject& s, int64_t m,
                                  const std::vector<const Candidate*>& ks,
                                  bool cold, const TimingOptions& timing,
                                  std::vector<CandidateRow>* rows) {
  std::vector<double> us(ks.size(), 0.0);
  std::vector<Contender> contenders;
  std::vector<size_t> index;
  for (size_t i = 0; i < ks.size(); ++i) {
    (*rows)[i].cold = cold;
    if (ks[i] == nullptr || ks[i]->first() == nullptr) continue;
    // The first copy stands for the rest: the same code over the same
    // packing of the same weights (checking each would cost a reference
    // product per copy).
    if (absl::Status v = RunAndVerify(s, *ks[i]->first(), m); !v.ok()) {
      (*rows)[i].status = absl::StrCat("wrong: ", v.message());
      continue;
    }
    const Candidate* k = ks[i];
    const size_t copies = cold ? k->copies.size() : 1;
    auto next = std::make_shared<size_t>(0);
    contenders.push_back([&s, k, m, copies, next] {
      const LinearKernel& kernel = *k->copies[(*next)++ % copies];
      kernel.Run({m, s.x.data(), s.desc.k, s.y.data(), s.desc.n});
      return absl::OkStatus();
    });
    index.push_back(i);
  }
  auto results = TimeInterleaved(contenders, timing);
  for (size_t j = 0; j < results.size(); ++j) {
    CandidateRow& row = (*rows)[index[j]];
    if (!results[j].ok()) {
      row.status = absl::StrCat("error: ", results[j].status().message());
      continue;
    }
    row.status = "ok";
    row.median_us = results[j]->median_us;
    us[index[j]] = results[j]->median_us;
  }
  for (size_t i = 0; i < ks.size(); ++i) {
    if (us[i] > 0 && us[0] > 0) (*rows)[i].gain = us[0] / us[i];
  }
  return us;
}

class Sweep {
 public:
  Sweep(const SweepConfig& config, const ProgressFn& progress,
        const KernelMaker& maker)
      : config_(config),
        progress_(progress),
        maker_(maker),
        start_(Clock::now()) {}

  absl::StatusOr<SweepReport> Run() {
    const internal::CpuProfile& cpu = internal::HostCpu();
    const internal::IsaTier isa = internal::ActiveIsa();
    report_.cpu_class = internal::CpuClassOf(cpu, isa);
    report_.threads = GetNumThreads();
    report_.tuning.cpu_class = report_.cpu_class;
    report_.tuning.cpu_name = cpu.name;
    report_.tuning.created = UtcNow();
    for (Mode mode : config_.modes) {
      for (const LayerShape& shape : config_.layers) {
        if (OverBudget()) return report_;
        if (absl::Status s = SweepLayer(mode, shape, cpu, isa); !s.ok()) {
          return s;
        }
      }
    }
    return report_;
  }

 private:
  bool OverBudget() {
    if (config_.budget_s <= 0) return false;
    const double spent =
        std::chrono::duration<double>(Clock::now() - start_).count();
    if (spent < config_.budget_s) return false;
    if (!report_.budget_exhausted) {
      report_.budget_exhausted = true;
      report_.notes.push_back(
          absl::StrCat("budget of ", config_.budget_s,
                       " s spent: the rest keeps the defaults"));
    }
    return true;
  }

  void Say(const std::string& line) {
    if (progress_) progress_(line);
  }

  absl::Status SweepLayer(Mode mode, const LayerShape& shape,
                          const internal::CpuProfile& cpu,
                          internal::IsaTier isa) {
    Subject s;
    s.shape = shape;
    s.desc = BenchDesc(shape, mode);
    s.w = BenchWeights(s.desc, 0x5EEDu + shape.n * 31 + shape.k);
    int64_t max_m = 1;
    for (int64_t m : config_.ms) max_m = std::max(max_m, m);
    s.x = BenchActivations(max_m, s.desc.k, 0xACu + shape.k);
    s.y.assign(static_cast<size_t>(max_m * s.desc.n), 0);
    const std::string dims = absl::StrCat(shape.n, "x", shape.k);
    const std::string what = absl::StrCat(
        ToString(mode), " ", shape.name == dims ? "" : shape.name + " ", dims,
        " g", shape.group_size);
    std::string why;
    auto made = maker_(s.desc, s.w, {}, &why);
    if (!made.ok()) return made.status();
    if (*made == nullptr) {
      report_.notes.push_back(
          absl::StrCat(what, ": no JIT kernel (", why, "), skipped"));
      return absl::OkStatus();
    }
    const int64_t llc = std::max<int64_t>(cpu.l3_bytes, 1 << 20);
    s.cold_copies =
        ColdCopies(static_cast<int64_t>((*made)->packed_bytes()), llc);
    s.defaults.copies.push_back(*std::move(made));
    if (absl::Status b = AddCopies(
            s, {}, AnyCold(config_.ms) ? s.cold_copies : 1, &s.defaults, &why);
        !b.ok()) {
      return b;
    }

    ParamMap merged;
    for (const CandidateGroup& group :
         SweepCandidates(mode, cpu, isa, config_.quick)) {
      std::vector<int64_t> ms;
      for (int64_t m : config_.ms) {
        if (GroupMatters(group, mode, cpu, isa, m)) ms.push_back(m);
      }
      if (ms.empty()) continue;
      ParamMap winner;
      if (!SweepGroup(s, group, ms, what, &winner)) return absl::OkStatus();
      merged.insert(winner.begin(), winner.end());
    }
    Confirm(s, merged, what);
    return absl::OkStatus();
  }

  bool Cold(int64_t m) const { return m <= config_.cold_max_m; }
  bool AnyCold(const std::vector<int64_t>& ms) const {
    for (int64_t m : ms) {
      if (Cold(m)) return true;
    }
    return false;
  }

  // Builds `params`' kernels until *c holds `copies` of them. An error
  // status is a failure of the machinery; a candidate that cannot run
  // leaves *c empty with *why_not set.
  absl::Status AddCopies(Subject& s, const ParamMap& params, int copies,
                         Candidate* c, std::string* why_not) {
    while (static_cast<int>(c->copies.size()) < copies) {
      auto made = maker_(s.desc, s.w, params, why_not);
      if (!made.ok()) return made.status();
      if (*made == nullptr) {
        c->copies.clear();
        if (why_not->empty()) *why_not = "not built";
        return absl::OkStatus();
      }
      c->copies.push_back(*std::move(made));
    }
    return absl::OkStatus();
  }

  // Times a group's options at the M values it matters for; returns false
  // when the budget ran out. *winner: the best option by mean log gain,
  // empty if none beat the defaults.
  bool SweepGroup(Subject& s, const CandidateGroup& group,
                  const std::vector<int64_t>& ms, const std::string& what,
                  ParamMap* winner) {
    std::vector<Candidate> built(group.options.size());
    std::vector<std::string> invalid(group.options.size());
    const int copies = AnyCold(ms) ? s.cold_copies : 1;
    for (size_t i = 0; i < group.options.size(); ++i) {
      std::string why;
      absl::Status b = AddCopies(s, group.options[i], copies, &built[i], &why);
      if (!b.ok()) why = std::string(b.message());
      if (built[i].first() == nullptr) invalid[i] = why;
    }
    std::vector<double> log_gain(group.options.size(), 0.0);
    std::vector<int> timed(group.options.size(), 0);
    for (int64_t m : ms) {
      if (OverBudget()) return false;
      Say(absl::StrCat(what, " M=", m, Cold(m) ? " cold" : "", ": ", group.name,
                       " (", group.options.size(), " options)"));
      std::vector<const Candidate*> ks = {&s.defaults};
      std::vector<CandidateRow> rows = {RowFor(s, m, "defaults", {})};
      for (size_t i = 0; i < built.size(); ++i) {
        ks.push_back(&built[i]);
        rows.push_back(RowFor(s, m, group.name, group.options[i]));
        if (!invalid[i].empty()) rows.back().status = "invalid: " + invalid[i];
      }
      const std::vector<double> us =
          VerifyAndTime(s, m, ks, Cold(m), config_.timing, &rows);
      if (us[0] <= 0) {  // the defaults themselves failed: nothing to win
        report_.candidates.insert(report_.candidates.end(), rows.begin(),
                                  rows.end());
        return true;
      }
      for (size_t i = 0; i < built.size(); ++i) {
        if (us[i + 1] > 0) {
          log_gain[i] += std::log(us[0] / us[i + 1]);
          ++timed[i];
        }
      }
      report_.candidates.insert(report_.candidates.end(), rows.begin(),
                                rows.end());
    }
    // A winner must have run correctly at every M and beat the defaults
    // on average by more than timing noise (1%).
    double best = std::log(1.01);
    for (size_t i = 0; i < built.size(); ++i) {
      if (timed[i] != static_cast<int>(ms.size())) continue;
      const double mean = log_gain[i] / static_cast<double>(ms.size());
      if (mean > best) {
        best = mean;
        *winner = group.options[i];
      }
    }
    return true;
  }

  // Checks and times the combined winners against the defaults at every
  // M; records the entry only if it is correct and faster overall.
  void Confirm(Subject& s, const ParamMap& merged, const std::string& what) {
    Candidate built;
    const Candidate* combined = nullptr;
    if (!merged.empty()) {
      std::string why;
      absl::Status b = AddCopies(
          s, merged, AnyCold(config_.ms) ? s.cold_copies : 1, &built, &why);
      if (!b.ok()) why = std::string(b.message());
      if (built.first() != nullptr) {
        combined = &built;
      } else {
        report_.notes.push_back(
            absl::StrCat(what, ": the combined winners could not be built (",
                         why, "); defaults kept"));
      }
    }
    std::vector<WinnerRow> winners;
    double log_gain = 0.0;
    bool all_ok = true;
    for (int64_t m : config_.ms) {
      if (OverBudget()) return;
      Say(absl::StrCat(what, " M=", m, Cold(m) ? " cold" : "", ": confirming ",
                       ParamsToString(merged)));
      std::vector<const Candidate*> ks = {&s.defaults};
      std::vector<CandidateRow> rows = {RowFor(s, m, "defaults", {})};
      if (combined) {
        ks.push_back(combined);
        rows.push_back(RowFor(s, m, "combined", merged));
      }
      std::vector<double> us =
          VerifyAndTime(s, m, ks, Cold(m), config_.timing, &rows);
      us.resize(2, 0.0);
      report_.candidates.insert(report_.candidates.end(), rows.begin(),
                                rows.end());
      WinnerRow w;
      static_cast<SweepPoint&>(w) = PointFor(s, m);
      w.default_us = us[0];
      w.tuned_us = combined ? us[1] : us[0];
      if (combined && (us[0] <= 0 || us[1] <= 0)) all_ok = false;
      if (combined && us[0] > 0 && us[1] > 0)
        log_gain += std::log(us[0] / us[1]);
      winners.push_back(w);
    }
    const bool keep = combined != nullptr && all_ok && log_gain > 0;
    for (WinnerRow& w : winners) {
      w.params = keep ? ParamsToString(merged) : "defaults";
      if (!keep) w.tuned_us = w.default_us;
      report_.winners.push_back(w);
    }
    if (keep) {
      internal::TuningEntry e;
      e.mode = s.desc.mode;
      e.n = s.desc.n;
      e.k = s.desc.k;
      e.group_size = s.desc.group_size;
      e.params = merged;
      report_.tuning.entries.push_back(e);
    } else if (combined != nullptr) {
      report_.notes.push_back(absl::StrCat(
          what, ": the combined winners (", ParamsToString(merged),
          ") were not faster than the defaults on average over the M values; "
          "defaults kept"));
    }
  }

  const SweepConfig& config_;
  const ProgressFn& progress_;
  const KernelMaker& maker_;
  const Clock::time_point start_;
  SweepReport report_;
};

}  // namespace

KernelMaker JitKernelMaker() {
  return [](const LayerDesc& desc, const CanonicalWeights& w,
            const ParamMap& params, std::string* why_not)
             -> absl::StatusOr<std::unique_ptr<LinearKernel>> {
    const internal::CpuProfile& cpu = internal::HostCpu();
    const internal::IsaTier isa = internal::ActiveIsa();
    if (desc.mode == Mode::kDA8W4) {
      auto p = internal::ApplyDa8w4Params(
          params, internal::DefaultDa8w4Params(cpu, isa), isa);
      if (!p.ok()) {
        *why_not = std::string(p.status().message());
        return std::unique_ptr<LinearKernel>();
      }
      return internal::MakeDa8w4JitKernel(desc, w, cpu, isa, *p, why_not);
    }
    auto p = internal::ApplyW4a16Params(
        params, internal::DefaultW4a16Params(cpu, isa), isa);
    if (!p.ok()) {
      *why_not = std::string(p.status().message());
      return std::unique_ptr<LinearKernel>();
    }
    return internal::MakeW4a16JitKernel(desc, w, cpu, isa, *p, why_not);
  };
}

absl::StatusOr<SweepReport> RunSweep(const SweepConfig& config,
                                     const ProgressFn& progress,
                                     const KernelMaker& maker) {
  SetNumThreads(config.threads);
  Sweep sweep(config, progress, maker);
  return sweep.Run();
}

}  // namespace w4jit::perf
