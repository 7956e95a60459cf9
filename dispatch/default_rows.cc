#include "dispatch/default_rows.h"

#include "absl/strings/match.h"
#include "dispatch/isa_traits.h"

namespace w4jit::internal {

std::string CpuClassBase(const CpuProfile& cpu) {
  const std::string cls = CpuClassOf(cpu, IsaTier::kRef);
  return cls.substr(0, cls.find('/'));
}

std::vector<const DefaultsRow*> MatchingRows(
    const std::vector<DefaultsRow>& rows, const CpuProfile& cpu, IsaTier isa) {
  const std::string cls = CpuClassBase(cpu);
  std::vector<const DefaultsRow*> out;
  for (const DefaultsRow& row : rows) {
    // A row of a family ("zen5") holds for its variants ("zen5-fp256").
    const std::string family = row.cpu_class;
    const bool of_family = cls == family || absl::StartsWith(cls, family + "-");
    if (of_family && TierHas(isa, row.needs)) {
      out.push_back(&row);
    }
  }
  return out;
}

}  // namespace w4jit::internal
