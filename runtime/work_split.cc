#include "runtime/work_split.h"

#include <algorithm>

namespace w4jit::internal {

Range SplitRange(int64_t total, int parts, int part, int64_t align) {
  if (align < 1) align = 1;
  if (parts < 1) parts = 1;
  const int64_t units = (total + align - 1) / align;
  const int64_t base = units / parts;
  const int64_t extra = units % parts;
  const int64_t begin_u = part * base + std::min<int64_t>(part, extra);
  const int64_t end_u = begin_u + base + (part < extra ? 1 : 0);
  return {std::min(total, begin_u * align), std::min(total, end_u * align)};
}

int SmallMParts(int64_t blocks, int threads, int64_t align) {
  if (align < 1) align = 1;
  const int64_t units = (blocks + align - 1) / align;
  return static_cast<int>(
      std::max<int64_t>(1, std::min<int64_t>(units, std::max(threads, 1))));
}

}  // namespace w4jit::internal
