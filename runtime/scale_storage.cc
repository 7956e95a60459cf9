#include "runtime/scale_storage.h"

#include <cstring>

#include "base/numeric.h"

namespace w4jit::internal {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace

bool ExactIn(float f, DType t) {
  uint16_t h;
  switch (t) {
    case DType::kBF16:
      return (Bits(f) & 0xFFFFu) == 0;
    case DType::kF16:
      return F32ToF16Exact(f, &h);
    case DType::kF32:
      break;
  }
  return true;
}

void StoreScale(uint8_t* base, int64_t i, float f, DType t) {
  if (t == DType::kF32) {
    std::memcpy(base + i * 4, &f, 4);
    return;
  }
  uint16_t h = 0;
  if (t == DType::kBF16) {
    h = static_cast<uint16_t>(Bits(f) >> 16);
  } else {
    F32ToF16Exact(f, &h);
  }
  std::memcpy(base + i * 2, &h, 2);
}

}  // namespace w4jit::internal
