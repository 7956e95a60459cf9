#include "dispatch/default_rows.h"

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
    if (cls == row.cpu_class && isa >= row.min_tier && isa <= row.max_tier) {
      out.push_back(&row);
    }
  }
  return out;
}

}  // namespace w4jit::internal
