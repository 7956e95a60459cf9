// What `w4jit sweep` tries: for each mode, groups of parameter options that
// each touch one concern of the kernels (the small-M tile, the large-M
// tile, the hand-over M, ...). Groups have disjoint keys, so the winners
// of the groups combine into one tuning entry.
#ifndef W4JIT_PERF_LIB_SWEEP_SWEEP_CANDIDATES_H_
#define W4JIT_PERF_LIB_SWEEP_SWEEP_CANDIDATES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "dispatch/tuning.h"
#include "w4jit/types.hpp"

namespace w4jit::perf {

// Which M values a group's options can change.
enum class Regime { kSmallM, kLargeM, kHandover, kAllM };

struct CandidateGroup {
  std::string name;  // "small_m_tile", "large_m_tile", "handover", ...
  Regime regime = Regime::kAllM;
  std::vector<internal::ParamMap> options;  // partial maps over the defaults
};

std::vector<CandidateGroup> SweepCandidates(Mode mode,
                                            const internal::CpuProfile& cpu,
                                            internal::IsaTier isa, bool quick);

// True if M runs the large-M path under the default parameters.
bool DefaultIsLargeM(Mode mode, const internal::CpuProfile& cpu,
                     internal::IsaTier isa, int64_t m);

// Whether timing a group at M can show a difference from the defaults.
bool GroupMatters(const CandidateGroup& group, Mode mode,
                  const internal::CpuProfile& cpu, internal::IsaTier isa,
                  int64_t m);

// "mr=6 nblk=1", for tables; "defaults" for an empty map.
std::string ParamsToString(const internal::ParamMap& params);

}  // namespace w4jit::perf

#endif  // W4JIT_PERF_LIB_SWEEP_SWEEP_CANDIDATES_H_
