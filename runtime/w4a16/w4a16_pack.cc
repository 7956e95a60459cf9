#include "runtime/w4a16/w4a16_pack.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <type_traits>

#include "base/numeric.h"
#include "runtime/scale_storage.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/work_split.h"

namespace w4jit::internal {
namespace {

// Nibble of column n (global), k; padded columns hold the zero point, so
// they contribute exactly zero.
uint8_t NibbleAt(const CanonicalWeights& w, int64_t n, int64_t k) {
  if (n >= w.n) return w.asymmetric ? 0 : 8;
  return w.U(n, k);
}

void PackBlockF32Fma(const CanonicalWeights& w, const W4a16Layout& l,
                     int64_t n0, uint8_t* out) {
  const int64_t nb = l.block_n();
  for (int64_t p = 0; p < l.k / 2; ++p) {
    for (int64_t j = 0; j < nb; ++j) {
      const int byte =
          NibbleAt(w, n0 + j, 2 * p) | (NibbleAt(w, n0 + j, 2 * p + 1) << 4);
      // s4: the high nibble in two's complement (u ^ 8), w4a16_decode.h.
      out[p * nb + j] = static_cast<uint8_t>(l.asymmetric ? byte : byte ^ 0x80);
    }
  }
}

void PackBlockBf16Dot(const CanonicalWeights& w, const W4a16Layout& l,
                      int64_t n0, uint8_t* out) {
  const int64_t nb = l.block_n();
  for (int64_t o = 0; o < l.k / 8; ++o) {
    uint8_t* octet = out + o * 4 * nb;
    for (int v = 0; v < l.nv; ++v) {
      for (int c = 0; c < l.lanes; ++c) {
        const int64_t n = n0 + int64_t{v} * l.lanes + c;
        // Byte 2e + h of column c: k = 8o + e + 4h and k + 2 (w4a16_layout.h).
        for (int e = 0; e < 2; ++e) {
          for (int h = 0; h < 2; ++h) {
            const int64_t k = 8 * o + e + 4 * h;
            octet[v * 4 * l.lanes + 4 * c + 2 * e + h] = static_cast<uint8_t>(
                NibbleAt(w, n, k) | (NibbleAt(w, n, k + 2) << 4));
          }
        }
      }
    }
  }
}

// What the meta holds in the float zero point's place for column n (< w.n)
// of group g: the checkpoint's zf, or for folded integer zero points 8 - z
// (the kernel multiplies it by the scale; w4a16_layout.h).
float FloatZeroAt(const CanonicalWeights& w, const W4a16Layout& l, int64_t n,
                  int64_t g) {
  return l.folded_zero ? static_cast<float>(8 - w.Z(n, g)) : w.FZ(n, g);
}

// Weights and meta of block b.
void PackBlock(const CanonicalWeights& w, const W4a16Layout& layout, int64_t b,
               W4a16Packed* out) {
  const int64_t nb = layout.block_n();
  const int64_t groups = layout.groups();
  W4a16Packed& p = *out;
  uint8_t* wb = p.weights.data() + b * layout.block_weight_bytes();
  if (layout.flavor == Flavor::kBf16Dot) {
    PackBlockBf16Dot(w, layout, b * nb, wb);
  } else {
    PackBlockF32Fma(w, layout, b * nb, wb);
  }
  const DType t = layout.meta_dtype;
  for (int64_t g = 0; g < groups; ++g) {
    uint8_t* meta = p.meta.data() + b * layout.block_meta_bytes() +
                    g * layout.group_meta_bytes();
    for (int64_t j = 0; j < nb; ++j) {
      const int64_t n = b * nb + j;
      StoreScale(meta, j, n < w.n ? w.S(n, g) : 0.0f, t);
      if (layout.float_zero) {
        // Integer zero points folded (w4a16_layout.h): 8 - z.
        const float zf = n < w.n ? FloatZeroAt(w, layout, n, g) : 0.0f;
        StoreScale(meta, nb + j, zf, t);
        if (layout.flavor != Flavor::kBf16Dot) {
          StoreScale(meta, 2 * nb + j, 16.0f * zf, t);  // exact
        }
        continue;
      }
      if (!layout.asymmetric) continue;
      // The f32-FMA flavour's integer zero points (dot folds z, above),
      // as 32-bit integers: the meta is f32 then (MetaMayBe16Bit).
      const uint32_t z = n < w.n ? w.Z(n, g) : 0;
      const uint32_t z16 = 16 * z;
      std::memcpy(meta + (nb + j) * 4, &z, 4);
      std::memcpy(meta + (2 * nb + j) * 4, &z16, 4);
    }
  }
}

}  // namespace

DType CompactW4a16MetaDtype(const CanonicalWeights& w,
                            const W4a16Layout& requested, bool f16_ok) {
  const W4a16Layout l = WithDotZeroPointsFolded(requested);
  if (!MetaMayBe16Bit(l)) return DType::kF32;
  ScaleDtypeChooser chooser(f16_ok);
  for (int64_t n = 0; chooser.AnyNarrow() && n < w.n; ++n) {
    for (int64_t g = 0; g < l.groups(); ++g) {
      chooser.See(w.S(n, g));
      // Float zero points are here only for the dot flavour, which holds
      // no 16 * zf (MetaMayBe16Bit).
      if (l.float_zero) chooser.See(FloatZeroAt(w, l, n, g));
    }
  }
  return chooser.Result();
}

W4a16Packed PackW4a16Weights(const CanonicalWeights& w,
                             const W4a16Layout& requested) {
  W4a16Packed p;
  p.layout = WithDotZeroPointsFolded(requested);
  const W4a16Layout& layout = p.layout;
  const int64_t nb = layout.block_n();
  const int64_t blocks = layout.blocks();
  p.weights.resize(static_cast<size_t>(blocks * layout.block_weight_bytes()));
  p.meta.resize(static_cast<size_t>(blocks * layout.block_meta_bytes()));
  const int parts = SmallMParts(blocks, Concurrency());
  ParallelRun(parts, [&](int c) {
    const Range r = SplitRange(blocks, parts, c);
    for (int64_t b = r.begin; b < r.end; ++b) PackBlock(w, layout, b, &p);
  });
  if (!w.bias.empty()) {
    p.bias.assign(static_cast<size_t>(blocks * nb), 0.0f);
    std::memcpy(p.bias.data(), w.bias.data(), w.bias.size() * sizeof(float));
  }
  return p;
}

namespace {

// Column i of the packed rows reads x column i, or k_perm[i] under
// act-order; a template parameter so that the plain loop stays as it was.
template <bool kPermuted>
int64_t SourceColumn(const int32_t* k_perm, int64_t i) {
  if constexpr (kPermuted) {
    return k_perm[i];
  } else {
    (void)k_perm;
    return i;
  }
}

// Group sums (float zero points): each K group of `sum_group` columns is
// followed by one slot per row of its sum; 0: no sums, one span of all K.
struct SumSpans {
  int64_t span;  // columns per span
  bool sums;
};

SumSpans SpansOf(int64_t k, int64_t sum_group) {
  return sum_group > 0 ? SumSpans{sum_group, true} : SumSpans{k, false};
}

// Calls body(src) with x as `const float*` or as bf16 bits
// (`const uint16_t*`), so that each dtype has its own loop.
template <class Body>
void WithSourceRows(const void* x, DType act_dtype, const Body& body) {
  if (act_dtype == DType::kF32) {
    body(static_cast<const float*>(x));
  } else {
    body(static_cast<const uint16_t*>(x));
  }
}

inline float SourceValue(const float* src, int64_t i) { return src[i]; }
inline float SourceValue(const uint16_t* src, int64_t i) {
  return Bf16ToF32(src[i]);
}

// kInt4: the int4 kernel's rows (x[2p] - x[2p + 1] / 16 in the even k, and
// the group slots, whose sums are a loop-carried add the panels' plain
// rows do without); else the panels' rows (group: unused).
template <bool kPermuted, bool kInt4>
void PackRowsF32Impl(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                     int64_t k, int mr, const int32_t* k_perm, int64_t group,
                     F32Int4RowSlots slots, float* out, int64_t row0,
                     int64_t row1) {
  const int64_t span = kInt4 ? group : k;
  const int nslots = kInt4 ? slots.count() : 0;
  const int64_t row_elems = k + k / span * nslots;
  WithSourceRows(x, act_dtype, [&](const auto* x_rows) {
    for (int64_t g0 = row0; g0 < row1; g0 += mr) {
      const int64_t rows = m - g0 < mr ? m - g0 : mr;
      float* row_group = out + g0 * row_elems;
      for (int64_t r = 0; r < rows; ++r) {
        const auto* src = x_rows + (g0 + r) * ldx;
        for (int64_t c0 = 0, slot = 0; c0 < k; c0 += span, slot += nslots) {
          // Columns of this span start `slot` slots further on.
          float* dst = row_group + slot * rows;
          float even_sum = 0.0f;
          float sum = 0.0f;
          for (int64_t i = c0; i < c0 + span; i += 2) {
            const float even =
                SourceValue(src, SourceColumn<kPermuted>(k_perm, i));
            const float odd =
                SourceValue(src, SourceColumn<kPermuted>(k_perm, i + 1));
            const float odd16 = odd * 0.0625f;
            dst[i * rows + r] = kInt4 ? even - odd16 : even;
            dst[(i + 1) * rows + r] = odd16;
            if constexpr (kInt4) {
              even_sum += even;
              sum += even;
              sum += odd;
            }
          }
          if constexpr (kInt4) {
            float* s = dst + (c0 + span) * rows + r;
            if (slots.neg8_even_sum) {
              *s = -8.0f * even_sum;
              s += rows;
            }
            if (slots.sum) *s = sum;
          }
        }
      }
    }
  });
}

template <bool kPermuted, bool kSums>
void PackRowsBf16PairsImpl(const void* x, DType act_dtype, int64_t ldx,
                           int64_t m, int64_t k, int mr, const int32_t* k_perm,
                           int64_t sum_group, uint32_t* out, int64_t row0,
                           int64_t row1) {
  const SumSpans sp = SpansOf(k, sum_group);
  const int64_t row_elems = k / 2 + (sp.sums ? k / sp.span : 0);
  for (int64_t g0 = row0; g0 < row1; g0 += mr) {
    const int64_t rows = m - g0 < mr ? m - g0 : mr;
    uint32_t* group = out + g0 * row_elems;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t row = (g0 + r) * ldx;
      for (int64_t c0 = 0, slot = 0; c0 < k; c0 += sp.span, ++slot) {
        uint32_t* dst = group + (sp.sums ? slot : 0) * rows;
        float sum = 0.0f;
        for (int64_t p = c0 / 2; p < (c0 + sp.span) / 2; ++p) {
          const int64_t c0p = SourceColumn<kPermuted>(k_perm, 2 * p);
          const int64_t c1p = SourceColumn<kPermuted>(k_perm, 2 * p + 1);
          uint16_t lo, hi;
          if (act_dtype == DType::kF32) {
            const float* src = static_cast<const float*>(x) + row;
            lo = F32ToBf16(src[c0p]);
            hi = F32ToBf16(src[c1p]);
          } else {
            const uint16_t* src = static_cast<const uint16_t*>(x) + row;
            lo = src[c0p];
            hi = src[c1p];
          }
          dst[p * rows + r] = lo | (static_cast<uint32_t>(hi) << 16);
          if constexpr (kSums) {
            sum += Bf16ToF32(lo);
            sum += Bf16ToF32(hi);
          }
        }
        if (sp.sums) {
          uint32_t bits;
          std::memcpy(&bits, &sum, 4);
          dst[(c0 + sp.span) / 2 * rows + r] = bits;
        }
      }
    }
  }
}

// Calls run(permuted, flag) with std::bool_constant arguments, so that
// each combination is its own instantiation (flag: the bf16 rows' sums,
// or the f32 rows' int4 format).
template <class Run>
void DispatchPackFlags(bool permuted, bool flag, const Run& run) {
  using T = std::true_type;
  using F = std::false_type;
  if (permuted) {
    flag ? run(T{}, T{}) : run(T{}, F{});
  } else {
    flag ? run(F{}, T{}) : run(F{}, F{});
  }
}

void PackF32Rows(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                 int64_t k, int mr, float* out, const int32_t* k_perm,
                 bool int4, int64_t group, F32Int4RowSlots slots) {
  ForRowGroups(m, k, mr, [&](int64_t row0, int64_t row1) {
    auto run = [&](auto permuted, auto int4_rows) {
      PackRowsF32Impl<decltype(permuted)::value, decltype(int4_rows)::value>(
          x, act_dtype, ldx, m, k, mr, k_perm, group, slots, out, row0, row1);
    };
    DispatchPackFlags(k_perm != nullptr, int4, run);
  });
}

}  // namespace

void ForRowGroups(int64_t m, int64_t k, int mr,
                  const std::function<void(int64_t, int64_t)>& pack) {
  constexpr int64_t kMinElementsPerChunk = int64_t{1} << 16;
  const int64_t groups = (m + mr - 1) / mr;
  const int chunks = static_cast<int>(std::clamp<int64_t>(
      std::min(groups, m * k / kMinElementsPerChunk), 1, Concurrency()));
  if (chunks == 1) {
    pack(0, m);
    return;
  }
  ParallelRun(chunks, [&](int c) {
    const Range r = SplitRange(groups, chunks, c);
    pack(r.begin * mr, std::min(m, r.end * mr));
  });
}

int64_t PackedBf16PairsRowElements(int64_t k, int64_t sum_group) {
  return k / 2 + (sum_group > 0 ? k / sum_group : 0);
}

int64_t PackedF32Int4RowElements(int64_t k, int64_t group,
                                 F32Int4RowSlots slots) {
  return k + k / group * slots.count();
}

void PackRowsF32(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                 int64_t k, int mr, float* out, const int32_t* k_perm) {
  PackF32Rows(x, act_dtype, ldx, m, k, mr, out, k_perm, /*int4=*/false, k,
              F32Int4RowSlots{});
}

void PackRowsF32Int4(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                     int64_t k, int mr, float* out, const int32_t* k_perm,
                     int64_t group, F32Int4RowSlots slots) {
  PackF32Rows(x, act_dtype, ldx, m, k, mr, out, k_perm, /*int4=*/true, group,
              slots);
}

void PackRowsBf16Pairs(const void* x, DType act_dtype, int64_t ldx, int64_t m,
                       int64_t k, int mr, uint32_t* out, const int32_t* k_perm,
                       int64_t sum_group) {
  ForRowGroups(m, k, mr, [&](int64_t row0, int64_t row1) {
    auto run = [&](auto permuted, auto sums) {
      PackRowsBf16PairsImpl<decltype(permuted)::value, decltype(sums)::value>(
          x, act_dtype, ldx, m, k, mr, k_perm, sum_group, out, row0, row1);
    };
    DispatchPackFlags(k_perm != nullptr, sum_group > 0, run);
  });
}

}  // namespace w4jit::internal
