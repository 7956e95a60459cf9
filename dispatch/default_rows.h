// Per-CPU defaults as data. Each kernel family has base values per vector
// width (runtime/w4a16/w4a16_params.cc, runtime/da8w4/da8w4_params.cc) and a
// table of rows: for one CPU class and the ISA features its kernels use,
// the parameters that differ there, by their tuning names, each row marked
// measured (with the docs/performance run it came from) or guessed (with why).
// The rows go through the same parser as a tuning file's entries, so a row can
// hold nothing a tuning file could not (after XNNPACK's gemm-config.c and
// llama.cpp's repack tile choice: one reviewable block per family).
#ifndef W4JIT_DISPATCH_DEFAULT_ROWS_H_
#define W4JIT_DISPATCH_DEFAULT_ROWS_H_

#include <string>
#include <vector>

#include "dispatch/cpu_profile.h"
#include "dispatch/isa_traits.h"
#include "dispatch/tuning.h"

namespace w4jit::internal {

enum class Evidence : int { kMeasured, kGuessed };

struct DefaultsRow {
  // CpuClassOf()'s CPU part ("zen3", "zen5-fp256", "intel-avx512", ...),
  // or a family: "zen5" holds for "zen5" and "zen5-fp256" (a variant is
  // the family's name, a dash and more), so that no row is a copy.
  const char* cpu_class;
  // The features the kernels' tier (after W4JIT_ISA) must have for the
  // row to hold: those of the kernels that were measured (or guessed),
  // e.g. IsaFeature::kAvx512Vnni for DA8W4's vpdpbusd tiles.
  IsaFeatures needs;
  Evidence evidence;
  // Measured: the run (docs/performance/...) and what it showed; guessed:
  // from what.
  const char* source;
  ParamMap params;  // the family's tuning names
};

// "zen5-fp256" of "zen5-fp256/avx512_bf16": the class without the tier.
std::string CpuClassBase(const CpuProfile& cpu);

// The rows that hold on this CPU (its class or the class's family) at
// `isa` (a tier with the row's features), in table order (a later row's
// value wins).
std::vector<const DefaultsRow*> MatchingRows(
    const std::vector<DefaultsRow>& rows, const CpuProfile& cpu, IsaTier isa);

}  // namespace w4jit::internal

#endif  // W4JIT_DISPATCH_DEFAULT_ROWS_H_
