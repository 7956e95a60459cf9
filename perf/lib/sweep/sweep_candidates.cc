#include "perf/lib/sweep/sweep_candidates.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dispatch/isa_traits.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/w4a16/w4a16_params.h"

namespace w4jit::perf {
namespace {

using internal::IsaTier;
using internal::ParamMap;

bool Avx512(IsaTier isa) {
  return internal::TierHas(isa, internal::IsaFeature::kAvx512);
}

// One option per value of `key`.
std::vector<ParamMap> Each(const std::string& key,
                           const std::vector<int64_t>& values) {
  std::vector<ParamMap> out;
  for (int64_t v : values) out.push_back({{key, v}});
  return out;
}

// Whether `option` over the defaults is a DA8W4 kernel `isa` can build:
// the tiles' registers and the chunk limit are the generator's plans'
// (jit/da8w4_gemm_plan.h), asked through the parameter check.
bool Da8w4Fits(const internal::CpuProfile& cpu, IsaTier isa,
               const ParamMap& option) {
  return internal::ApplyDa8w4Params(option,
                                    internal::DefaultDa8w4Params(cpu, isa), isa)
      .ok();
}

std::vector<CandidateGroup> Da8w4Groups(const internal::CpuProfile& cpu,
                                        IsaTier isa, bool quick) {
  std::vector<CandidateGroup> groups;
  auto add_if_fits = [&](CandidateGroup* group, ParamMap option) {
    if (Da8w4Fits(cpu, isa, option)) group->options.push_back(option);
  };

  CandidateGroup small{"small_m_tile", Regime::kSmallM, {}};
  for (int nblk : quick ? std::vector<int>{2, 4, 6}
                        : std::vector<int>{1, 2, 3, 4, 6, 8, 12}) {
    add_if_fits(&small, {{"small_m_nblk", nblk}});
  }
  if (!quick) {
    add_if_fits(&small, {{"chunk_quads", 4}});
    add_if_fits(&small, {{"chunk_quads", 16}});
  }
  groups.push_back(small);

  CandidateGroup large{"large_m_tile", Regime::kLargeM, {}};
  const std::vector<std::pair<int, int>> tiles =
      quick ? std::vector<std::pair<int, int>>{{4, 1}, {6, 1}, {3, 2}}
            : std::vector<std::pair<int, int>>{{2, 1}, {4, 1}, {6, 1}, {2, 2},
                                               {3, 2}, {4, 2}, {6, 2}, {8, 1},
                                               {4, 3}, {7, 2}};
  for (auto [mr, nblk] : tiles)
    add_if_fits(&large, {{"mr", mr}, {"nblk", nblk}});
  groups.push_back(large);

  // The decoded-panel tile (M >= panel_min_m): no unpack registers, so on
  // AVX-512 up to 28 accumulators + the weights + one broadcast.
  CandidateGroup panel_tile{"panel_tile", Regime::kLargeM, {}};
  const std::vector<std::pair<int, int>> panel_tiles =
      Avx512(isa) ? (quick ? std::vector<std::pair<int, int>>{{14, 1}, {6, 2}}
                           : std::vector<std::pair<int, int>>{{14, 1},
                                                              {12, 1},
                                                              {10, 1},
                                                              {8, 1},
                                                              {6, 2},
                                                              {4, 3},
                                                              {3, 4}})
                  : (quick ? std::vector<std::pair<int, int>>{{6, 1}, {4, 1}}
                           : std::vector<std::pair<int, int>>{
                                 {6, 1}, {5, 1}, {4, 1}, {3, 2}, {2, 3}});
  for (auto [mr, nblk] : panel_tiles) {
    add_if_fits(&panel_tile, {{"panel_mr", mr}, {"panel_nblk", nblk}});
  }
  groups.push_back(panel_tile);
  // From which M the panel is decoded; kNoPanels: never (in-loop
  // unpacking at every M, the path before decoded panels, and Zen 4's
  // default).
  constexpr int64_t kNever = internal::Da8w4Params::kNoPanels;
  groups.push_back({"panel_min_m", Regime::kLargeM,
                    Each("panel_min_m", quick ? std::vector<int64_t>{32, kNever}
                                              : std::vector<int64_t>{
                                                    17, 32, 64, 128, kNever})});
  // From which M the AMX tiles run (the amx tier only, docs/amx.md);
  // kNoAmx: never.
  if (internal::TierHas(isa, internal::IsaFeature::kAmxInt8)) {
    constexpr int64_t kNoAmx = internal::Da8w4Params::kNoAmx;
    groups.push_back({"amx_min_m", Regime::kLargeM,
                      Each("amx_min_m", quick ? std::vector<int64_t>{24, kNoAmx}
                                              : std::vector<int64_t>{
                                                    17, 24, 32, 64, kNoAmx})});
  }
  if (!quick) {
    groups.push_back({"panel", Regime::kLargeM,
                      Each("panel_bytes", {128 << 10, 512 << 10, 1 << 20})});
  }
  groups.push_back(
      {"handover", Regime::kHandover,
       Each("handover_m", quick ? std::vector<int64_t>{4, 8}
                                : std::vector<int64_t>{2, 4, 8, 32, 64})});
  return groups;
}

std::vector<CandidateGroup> W4a16Groups(const internal::CpuProfile& cpu,
                                        IsaTier isa, bool quick) {
  std::vector<CandidateGroup> groups;
  // Whether `option` over the defaults fits `isa`: the tiles' registers are
  // the generators' plans', asked through the parameter check.
  const internal::W4a16Params defaults = internal::DefaultW4a16Params(cpu, isa);
  auto fits = [&](const ParamMap& option) {
    return internal::ApplyW4a16Params(option, defaults, isa).ok();
  };
  groups.push_back({"small_m_tile", Regime::kSmallM,
                    Each("gemv_mr", quick ? std::vector<int64_t>{1, 3}
                                          : std::vector<int64_t>{1, 3, 4})});
  // The tall int4 tile below the panel hand-over (batched decode): rows x
  // vectors within the register file (16 ymm: accumulators + 2 decoded per
  // vector + 1 broadcast; 32 zmm: accumulators + 2 + 3 constants).
  CandidateGroup tall{"tall_tile", Regime::kSmallM, {}};
  const std::vector<std::pair<int, int>> tall_tiles =
      Avx512(isa) ? std::vector<std::pair<int, int>>{{6, 4}, {8, 2}, {16, 1}}
                  : std::vector<std::pair<int, int>>{{4, 2}, {8, 1}, {12, 1}};
  for (size_t i = 0; i < tall_tiles.size() && (!quick || i < 2); ++i) {
    tall.options.push_back({{"tall_mr", tall_tiles[i].first},
                            {"tall_vectors", tall_tiles[i].second}});
  }
  groups.push_back(tall);
  // From which M the tall tile takes over from the small one. Its options
  // need their own group: a tall tile tried at an M below tall_min_m never
  // runs, so the tall_tile group alone cannot move the hand-over.
  groups.push_back(
      {"tall_handover", Regime::kSmallM,
       Each("tall_min_m", quick ? std::vector<int64_t>{3, 8}
                                : std::vector<int64_t>{2, 3, 4, 6, 8, 12})});
  CandidateGroup large{"large_m_tile", Regime::kLargeM, {}};
  const std::vector<std::pair<int, int>> tiles =
      quick ? std::vector<std::pair<int, int>>{{4, 2}, {6, 1}}
            : std::vector<std::pair<int, int>>{{4, 1}, {4, 2}, {6, 1},
                                               {8, 1}, {4, 4}, {6, 4}};
  for (auto [mr, nr] : tiles) {
    const ParamMap option = {{"gemm_mr", mr}, {"gemm_nr_vectors", nr}};
    if (fits(option)) large.options.push_back(option);
  }
  if (!Avx512(isa)) {
    // 4 x 3 vectors: 3 FMAs per broadcast instead of 2 (16 ymm exactly),
    // on 24- or 48-column blocks.
    for (int bv : {3, 6}) {
      large.options.push_back(
          {{"gemm_mr", 4}, {"gemm_nr_vectors", 3}, {"block_vectors", bv}});
    }
  }
  groups.push_back(large);
  groups.push_back({"k_block", Regime::kLargeM,
                    Each("kc", quick ? std::vector<int64_t>{128, 512}
                                     : std::vector<int64_t>{128, 512, 1024})});
  if (!quick) {
    groups.push_back({"m_block", Regime::kLargeM, Each("mc", {48, 192, 384})});
    groups.push_back(
        {"block_width", Regime::kAllM, Each("block_vectors", {2, 8})});
  }
  groups.push_back(
      {"handover", Regime::kHandover,
       Each("gemm_min_m", quick ? std::vector<int64_t>{4, 32}
                                : std::vector<int64_t>{2, 4, 16, 32, 64})});
  // From which M bf16 x runs the AMX tiles (the amx tier only,
  // docs/amx.md), and how many rows share a decoded panel there.
  if (internal::TierHas(isa, internal::IsaFeature::kAmxBf16)) {
    constexpr int64_t kNoAmx = internal::W4a16Params::kNoAmx;
    groups.push_back({"amx_min_m", Regime::kLargeM,
                      Each("amx_min_m", quick ? std::vector<int64_t>{6, kNoAmx}
                                              : std::vector<int64_t>{
                                                    4, 6, 8, 12, 16, kNoAmx})});
    if (!quick) {
      groups.push_back(
          {"amx_m_block", Regime::kLargeM, Each("amx_mc", {128, 256, 512})});
      // Two row tiles per tile call paid at M = 48-64 on an Intel Xeon
      // and were level above (docs/amx.md).
      groups.push_back(
          {"amx_row_blocks", Regime::kLargeM, Each("amx_row_blocks", {1, 2})});
    }
  }
  if (internal::TierHas(isa, internal::IsaFeature::kAvx512Bf16)) {
    // Which flavour wins depends on the CPU (design/performance.md).
    groups.push_back({"flavor", Regime::kAllM, Each("flavor", {1, 2})});
  }
  return groups;
}

// The M from which the large-M path runs, under the defaults.
int64_t DefaultLargeFrom(Mode mode, const internal::CpuProfile& cpu,
                         IsaTier isa) {
  if (mode == Mode::kDA8W4) {
    return internal::DefaultDa8w4Params(cpu, isa).handover_m + 1;
  }
  return internal::DefaultW4a16Params(cpu, isa).gemm_min_m;
}

}  // namespace

std::vector<CandidateGroup> SweepCandidates(Mode mode,
                                            const internal::CpuProfile& cpu,
                                            IsaTier isa, bool quick) {
  std::vector<CandidateGroup> groups = mode == Mode::kDA8W4
                                           ? Da8w4Groups(cpu, isa, quick)
                                           : W4a16Groups(cpu, isa, quick);
  // Software prefetch ahead of the small-M kernels' weight stream: it
  // matters only when the weights come from DRAM, which is how the sweep
  // times decode M values (SweepConfig::cold_max_m). The defaults' own
  // distance is not tried again.
  const int64_t current =
      mode == Mode::kDA8W4
          ? internal::DefaultDa8w4Params(cpu, isa).prefetch_distance
          : internal::DefaultW4a16Params(cpu, isa).prefetch_distance;
  std::vector<int64_t> distances;
  for (int64_t d : quick ? std::vector<int64_t>{0, 4096}
                         : std::vector<int64_t>{0, 2048, 4096, 8192}) {
    if (d != current) distances.push_back(d);
  }
  groups.push_back(
      {"prefetch", Regime::kSmallM, Each("prefetch_distance", distances)});
  return groups;
}

bool DefaultIsLargeM(Mode mode, const internal::CpuProfile& cpu, IsaTier isa,
                     int64_t m) {
  return m >= DefaultLargeFrom(mode, cpu, isa);
}

bool GroupMatters(const CandidateGroup& group, Mode mode,
                  const internal::CpuProfile& cpu, IsaTier isa, int64_t m) {
  switch (group.regime) {
    case Regime::kSmallM:
      return !DefaultIsLargeM(mode, cpu, isa, m);
    case Regime::kLargeM:
      return DefaultIsLargeM(mode, cpu, isa, m);
    case Regime::kHandover: {
      // An option matters at M if it moves M to the other path.
      const int64_t from = DefaultLargeFrom(mode, cpu, isa);
      for (const internal::ParamMap& o : group.options) {
        const int64_t v = o.begin()->second;
        const int64_t option_from = mode == Mode::kDA8W4 ? v + 1 : v;
        if ((m >= from) != (m >= option_from)) return true;
      }
      return false;
    }
    case Regime::kAllM:
      return true;
  }
  return true;
}

std::string ParamsToString(const internal::ParamMap& params) {
  if (params.empty()) return "defaults";
  std::string s;
  for (const auto& [k, v] : params) {
    absl::StrAppend(&s, s.empty() ? "" : " ", k, "=", v);
  }
  return s;
}

}  // namespace w4jit::perf
