#include "runtime/formats/common.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "base/numeric.h"

namespace w4jit::internal {
namespace {

// Candidate f16 bits for v, truncating; StoreExact checks the round trip.
uint16_t TruncateToF16(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const int exp = static_cast<int>((bits >> 23) & 0xFF);
  const uint32_t man = bits & 0x7FFFFF;
  if (exp == 0xFF) return static_cast<uint16_t>(sign | 0x7C00 | (man >> 13));
  if (exp == 0) return sign;  // f32 zero or subnormal (below f16's range)
  const int e = exp - 127;
  if (e > 15) return static_cast<uint16_t>(sign | 0x7C00);  // inf: mismatch
  if (e >= -14) {
    return static_cast<uint16_t>(sign | ((e + 15) << 10) | (man >> 13));
  }
  if (e < -24) return sign;
  // f16 subnormal: v = (0x800000 | man) * 2^(e - 23) = m16 * 2^-24.
  return static_cast<uint16_t>(sign | ((0x800000 | man) >> (-(e + 1))));
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

}  // namespace

absl::Status RequireMultipleOf8(const char* dim, int64_t value,
                                WeightFormat format, const char* what) {
  if (value % 8 == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s = %d is not a multiple of 8, which the %s format (8 nibbles per "
      "int32, %s) needs",
      dim, value, ToString(format), what));
}

bool StoreExact(float v, DType t, void* dst, int64_t i) {
  char* p = static_cast<char*>(dst) + i * static_cast<int64_t>(DTypeSize(t));
  if (t == DType::kF32) {
    std::memcpy(p, &v, 4);
    return true;
  }
  const uint16_t narrow = t == DType::kBF16 ? F32ToBf16(v) : TruncateToF16(v);
  std::memcpy(p, &narrow, 2);
  return SameBits(t == DType::kBF16 ? Bf16ToF32(narrow) : F16ToF32(narrow), v);
}

void ReadPackedAlongK(const void* words, uint8_t flip, CanonicalWeights* w) {
  const int64_t words_per_row = w->k / 8;
  w->u.resize(static_cast<size_t>(w->n * w->k));
  for (int64_t n = 0; n < w->n; ++n) {
    for (int64_t k = 0; k < w->k; ++k) {
      w->u[n * w->k + k] =
          GetNibble(words, n * words_per_row + k / 8, k % 8) ^ flip;
    }
  }
}

std::vector<uint8_t> WritePackedAlongK(const CanonicalWeights& w,
                                       uint8_t flip) {
  const int64_t words_per_row = w.k / 8;
  std::vector<uint8_t> out(static_cast<size_t>(w.n * words_per_row) * 4, 0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t k = 0; k < w.k; ++k) {
      SetNibble(&out, n * words_per_row + k / 8, k % 8, w.U(n, k) ^ flip);
    }
  }
  return out;
}

void ReadZerosAlongN(const void* words, const int pos[8], uint8_t add,
                     CanonicalWeights* w) {
  const int64_t words_per_group = w->n / 8;
  w->zeros.resize(static_cast<size_t>(w->n * w->groups));
  for (int64_t g = 0; g < w->groups; ++g) {
    for (int64_t n = 0; n < w->n; ++n) {
      const uint8_t stored =
          GetNibble(words, g * words_per_group + n / 8, pos[n % 8]);
      w->zeros[n * w->groups + g] = (stored + add) & 0xF;
    }
  }
}

std::vector<uint8_t> WriteZerosAlongN(const CanonicalWeights& w,
                                      const int pos[8], uint8_t add) {
  const int64_t words_per_group = w.n / 8;
  std::vector<uint8_t> out(static_cast<size_t>(w.groups * words_per_group) * 4,
                           0);
  for (int64_t g = 0; g < w.groups; ++g) {
    for (int64_t n = 0; n < w.n; ++n) {
      SetNibble(&out, g * words_per_group + n / 8, pos[n % 8],
                static_cast<uint8_t>((w.Z(n, g) - add) & 0xF));
    }
  }
  return out;
}

void ReadScales(const LayerDesc& desc, const void* src, GroupLayout layout,
                CanonicalWeights* w) {
  w->scales.resize(static_cast<size_t>(w->n * w->groups));
  for (int64_t n = 0; n < w->n; ++n) {
    for (int64_t g = 0; g < w->groups; ++g) {
      w->scales[n * w->groups + g] = LoadAsF32(
          src, desc.scale_dtype, GroupOffset(layout, g, n, w->n, w->groups));
    }
  }
}

absl::Status WriteScales(const LayerDesc& desc, const CanonicalWeights& w,
                         GroupLayout layout, std::vector<uint8_t>* out) {
  out->assign(static_cast<size_t>(w.n * w.groups) * DTypeSize(desc.scale_dtype),
              0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t g = 0; g < w.groups; ++g) {
      const float s = w.S(n, g);
      if (!StoreExact(s, desc.scale_dtype, out->data(),
                      GroupOffset(layout, g, n, w.n, w.groups))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "scale s[n = %d, g = %d] = %.9g is not exactly representable in "
            "%s",
            n, g, s, ToString(desc.scale_dtype)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ReadInt8ZeroPoints(const void* src, GroupLayout layout,
                                CanonicalWeights* w) {
  const int8_t* zp = static_cast<const int8_t*>(src);
  w->zeros.resize(static_cast<size_t>(w->n * w->groups));
  // Report the first bad value in storage order.
  const int64_t outer = layout == GroupLayout::kGroupsMajor ? w->groups : w->n;
  const int64_t inner = layout == GroupLayout::kGroupsMajor ? w->n : w->groups;
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t b = 0; b < inner; ++b) {
      const int64_t g = layout == GroupLayout::kGroupsMajor ? a : b;
      const int64_t n = layout == GroupLayout::kGroupsMajor ? b : a;
      const int v = zp[a * inner + b];
      if (v < 0 || v > 15) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "zero_points[g = %d, n = %d] = %d is outside [0, 15]", g, n, v));
      }
      w->zeros[n * w->groups + g] = static_cast<uint8_t>(v);
    }
  }
  return absl::OkStatus();
}

std::vector<uint8_t> WriteInt8ZeroPoints(const CanonicalWeights& w,
                                         GroupLayout layout) {
  std::vector<uint8_t> out(static_cast<size_t>(w.n * w.groups));
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t g = 0; g < w.groups; ++g) {
      out[GroupOffset(layout, g, n, w.n, w.groups)] = w.Z(n, g);
    }
  }
  return out;
}

absl::Status ReadFloatZeroPoints(const LayerDesc& desc, const void* src,
                                 GroupLayout layout, CanonicalWeights* w) {
  w->float_zeros.resize(static_cast<size_t>(w->n * w->groups));
  for (int64_t n = 0; n < w->n; ++n) {
    for (int64_t g = 0; g < w->groups; ++g) {
      const float z = LoadAsF32(src, desc.zero_point_dtype,
                                GroupOffset(layout, g, n, w->n, w->groups));
      if (!std::isfinite(z)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "zero_points[g = %d, n = %d] = %g is not a finite float zero "
            "point",
            g, n, z));
      }
      w->float_zeros[n * w->groups + g] = z;
    }
  }
  return absl::OkStatus();
}

absl::Status WriteFloatZeroPoints(const LayerDesc& desc,
                                  const CanonicalWeights& w, GroupLayout layout,
                                  std::vector<uint8_t>* out) {
  out->assign(
      static_cast<size_t>(w.n * w.groups) * DTypeSize(desc.zero_point_dtype),
      0);
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t g = 0; g < w.groups; ++g) {
      const float z = w.FZ(n, g);
      if (!StoreExact(z, desc.zero_point_dtype, out->data(),
                      GroupOffset(layout, g, n, w.n, w.groups))) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "float zero point z[n = %d, g = %d] = %.9g is not exactly "
            "representable in %s",
            n, g, z, ToString(desc.zero_point_dtype)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ReadZeroPoints(const LayerDesc& desc, const void* src,
                            GroupLayout layout, CanonicalWeights* w) {
  if (desc.zero_point_domain == ZeroPointDomain::kFloat) {
    return ReadFloatZeroPoints(desc, src, layout, w);
  }
  return ReadInt8ZeroPoints(src, layout, w);
}

absl::Status WriteZeroPoints(const LayerDesc& desc, const CanonicalWeights& w,
                             GroupLayout layout, std::vector<uint8_t>* out) {
  if (desc.zero_point_domain == ZeroPointDomain::kFloat) {
    return WriteFloatZeroPoints(desc, w, layout, out);
  }
  *out = WriteInt8ZeroPoints(w, layout);
  return absl::OkStatus();
}

void ReadBias(const LayerDesc& desc, const void* src, CanonicalWeights* w) {
  w->bias.resize(static_cast<size_t>(w->n));
  for (int64_t n = 0; n < w->n; ++n) {
    w->bias[n] = LoadAsF32(src, desc.bias_dtype, n);
  }
}

absl::Status WriteBias(const LayerDesc& desc, const CanonicalWeights& w,
                       std::vector<uint8_t>* out) {
  out->assign(static_cast<size_t>(w.n) * DTypeSize(desc.bias_dtype), 0);
  for (int64_t n = 0; n < w.n; ++n) {
    const float b = w.bias[n];
    if (!StoreExact(b, desc.bias_dtype, out->data(), n)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bias[%d] = %.9g is not exactly representable in %s",
                          n, b, ToString(desc.bias_dtype)));
    }
  }
  return absl::OkStatus();
}

}  // namespace w4jit::internal
