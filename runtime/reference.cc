// The reference implementation of docs/numerics.md. Every loop
// runs in a fixed, documented order so that its f32 results are
// reproducible and the tolerances of the fast kernels (stated relative to
// this code) are meaningful. The library is built without -mfma and in ISO
// C++ mode (GCC: -ffp-contract=off), so `a * b + c` below is two roundings.
#include "runtime/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "base/numeric.h"
#include "runtime/epilogue_ref.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/work_split.h"

namespace w4jit::internal {
namespace {

// Round half to even without depending on the FPU rounding mode. Only
// called with |v| <= ~128, where v - floor(v) is exact.
float RoundHalfEven(float v) {
  float r = std::floor(v);
  const float frac = v - r;
  if (frac > 0.5f || (frac == 0.5f && std::fmod(r, 2.0f) != 0.0f)) r += 1.0f;
  return r;
}

int64_t ResolvedGroupSize(int64_t group_size, int64_t k) {
  return group_size == -1 ? k : group_size;
}

// W4A16 for one row already widened to f32:
//   for g = 0..G-1 in order:
//     partial = 0; for k in g in order: partial += (float)(u - z) * x[k]
//     sum += s[g] * partial
//   y = sum + bias
// Float zero points (w = (u - 8) * s + zf, z = 8 above) add, per group,
//     xsum = 0; for k in g in order: xsum += x[k]
//     sum += zf[g] * xsum            (after the s[g] * partial term)
//
// Numerics::kZentorch instead (docs/numerics-zentorch.md): each dequantized
// weight w = (float)(u - z) * s (float zero points: (float)(u - 8) * s +
// zf, two roundings) is rounded to bf16, and
//   for k = 0..K-1 in order: sum += bf16(w[k]) * x[k]
//   y = sum + bias
float W4a16OutputF32(const CanonicalWeights& w, const float* x, int64_t n,
                     Numerics numerics) {
  if (numerics == Numerics::kZentorch) {
    float sum = 0.0f;
    for (int64_t g = 0; g < w.groups; ++g) {
      const float s = w.S(n, g);
      const int z = w.Z(n, g);
      for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
        float wk = static_cast<float>(w.U(n, k) - z) * s;
        if (w.float_zero()) wk += w.FZ(n, g);
        sum += Bf16ToF32(F32ToBf16(wk)) * x[k];
      }
    }
    return w.bias.empty() ? sum : sum + w.bias[n];
  }
  float sum = 0.0f;
  for (int64_t g = 0; g < w.groups; ++g) {
    const int z = w.Z(n, g);
    float partial = 0.0f;
    for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
      partial += static_cast<float>(w.U(n, k) - z) * x[k];
    }
    sum += w.S(n, g) * partial;
    if (w.float_zero()) {
      float xsum = 0.0f;
      for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
        xsum += x[k];
      }
      sum += w.FZ(n, g) * xsum;
    }
  }
  return w.bias.empty() ? sum : sum + w.bias[n];
}

std::vector<float> WidenRow(const void* x_row, DType act_dtype, int64_t k) {
  std::vector<float> out(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) out[i] = LoadAsF32(x_row, act_dtype, i);
  return out;
}

const void* RowPtr(const void* base, DType t, int64_t row, int64_t ld) {
  return static_cast<const char*>(base) + row * ld * DTypeSize(t);
}

// Per-row input prepared once per Run: the quantized row (DA8W4) or the
// row widened to f32 (W4A16).
struct PreparedRows {
  std::vector<QuantizedRow> quantized;
  std::vector<std::vector<float>> widened;
};

void PrepareRow(const LayerDesc& desc, const CanonicalWeights& w,
                const RunArgs& args, int64_t i, PreparedRows* rows) {
  std::vector<uint8_t> permuted;
  const void* x = ActOrderRow(RowPtr(args.x, desc.act_dtype, i, args.ldx),
                              desc.act_dtype, w.k_perm, &permuted);
  if (desc.mode == Mode::kDA8W4) {
    rows->quantized[i] = QuantizeRowRef(x, desc.act_dtype, desc.k,
                                        desc.group_size, desc.act_per_group());
  } else {
    rows->widened[i] = WidenRow(x, desc.act_dtype, desc.k);
  }
}

// Writes y[i, j] for one row and the output columns [col_begin, col_end)
// (of N_out), epilogue included.
void ComputeRowCols(const LayerDesc& desc, const CanonicalWeights& w,
                    const RunArgs& args, const PreparedRows& rows, int64_t i,
                    int64_t col_begin, int64_t col_end) {
  void* y_row =
      static_cast<char*>(args.y) + i * args.ldy * DTypeSize(desc.out_dtype);
  auto column = [&](int64_t j) {
    return desc.mode == Mode::kDA8W4
               ? Da8w4OutputRef(w, rows.quantized[i], j)
               : W4a16OutputF32(w, rows.widened[i].data(), j, desc.numerics);
  };
  const Epilogue& e = desc.epilogue;
  const int64_t half = desc.n / 2;
  for (int64_t j = col_begin; j < col_end; ++j) {
    float operands[2] = {0.0f, 0.0f};
    for (int b = 0; b < e.num_binary; ++b) {
      operands[b] =
          LoadAsF32(args.ep_data[b], e.binary[b].dtype, i * args.ep_ld[b] + j);
    }
    const float t = column(j);
    const float up = e.silu_mul ? column(half + j) : 0.0f;
    StoreFromF32(y_row, desc.out_dtype, j, EpilogueRef(e, t, up, operands));
  }
}

PreparedRows MakePreparedRows(const LayerDesc& desc, int64_t m) {
  PreparedRows rows;
  if (desc.mode == Mode::kDA8W4) {
    rows.quantized.resize(static_cast<size_t>(m));
  } else {
    rows.widened.resize(static_cast<size_t>(m));
  }
  return rows;
}

// Column tile of the parallel reference. Any split gives the same results:
// each output is computed by the same code from the same prepared row.
constexpr int64_t kColsPerTile = 64;

class ReferenceKernel final : public LinearKernel {
 public:
  ReferenceKernel(const LayerDesc& desc, CanonicalWeights w, std::string name)
      : desc_(desc), w_(std::move(w)), name_(std::move(name)) {}

  void Run(const RunArgs& args) const override {
    const int threads = Concurrency();
    PreparedRows rows = MakePreparedRows(desc_, args.m);
    const int row_chunks = static_cast<int>(std::min<int64_t>(args.m, threads));
    ParallelRun(row_chunks, [&](int c) {
      const Range r = SplitRange(args.m, row_chunks, c);
      for (int64_t i = r.begin; i < r.end; ++i) {
        PrepareRow(desc_, w_, args, i, &rows);
      }
    });

    const int64_t n_out = desc_.out_n();
    const int64_t col_tiles = (n_out + kColsPerTile - 1) / kColsPerTile;
    const int64_t tiles = args.m * col_tiles;
    const int chunks =
        static_cast<int>(std::min<int64_t>(tiles, int64_t{4} * threads));
    ParallelRun(chunks, [&](int c) {
      const Range r = SplitRange(tiles, chunks, c);
      for (int64_t t = r.begin; t < r.end; ++t) {
        const int64_t i = t / col_tiles;
        const int64_t col0 = (t % col_tiles) * kColsPerTile;
        ComputeRowCols(desc_, w_, args, rows, i, col0,
                       std::min(n_out, col0 + kColsPerTile));
      }
    });
  }

  size_t packed_bytes() const override {
    return w_.u.size() + w_.zeros.size() +
           (w_.scales.size() + w_.float_zeros.size()) * sizeof(float) +
           w_.bias.size() * sizeof(float) + w_.k_perm.size() * sizeof(int32_t);
  }

  std::vector<std::string> kernel_names() const override { return {name_}; }
  LayerCompute compute_at(int64_t) const override { return {}; }

 private:
  const LayerDesc desc_;
  const CanonicalWeights w_;
  const std::string name_;
};

}  // namespace

namespace {

// Quantizes x[begin, end) with one scale into qa; returns the scale, or NaN
// (qa left 0) if the range holds NaN or Inf.
float QuantizeRangeRef(const void* x, DType act_dtype, int64_t begin,
                       int64_t end, int8_t* qa) {
  float amax = 0.0f;
  for (int64_t i = begin; i < end; ++i) {
    const float v = LoadAsF32(x, act_dtype, i);
    if (!std::isfinite(v)) return std::numeric_limits<float>::quiet_NaN();
    amax = std::max(amax, std::fabs(v));
  }
  const float scale = std::max(amax, 1e-10f) / 127.0f;
  for (int64_t i = begin; i < end; ++i) {
    // A true division, not a multiplication by 1/sa: part of the definition.
    const float q = RoundHalfEven(LoadAsF32(x, act_dtype, i) / scale);
    qa[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
  return scale;
}

}  // namespace

QuantizedRow QuantizeRowRef(const void* x, DType act_dtype, int64_t k,
                            int64_t group_size, bool per_group) {
  const int64_t gs = ResolvedGroupSize(group_size, k);
  const int64_t groups = k / gs;
  QuantizedRow row;
  row.qa.assign(static_cast<size_t>(k), 0);
  row.group_sums.assign(static_cast<size_t>(groups), 0);
  if (per_group) {
    row.scale = 1.0f;
    row.group_scales.resize(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) {
      row.group_scales[g] =
          QuantizeRangeRef(x, act_dtype, g * gs, (g + 1) * gs, row.qa.data());
    }
  } else {
    // Bad input: the whole row's output becomes NaN through the scale.
    row.scale = QuantizeRangeRef(x, act_dtype, 0, k, row.qa.data());
  }
  for (int64_t i = 0; i < k; ++i) row.group_sums[i / gs] += row.qa[i];
  return row;
}

void Da8w4GroupAccRef(const CanonicalWeights& w, const QuantizedRow& row,
                      int64_t n, int32_t* acc) {
  for (int64_t g = 0; g < w.groups; ++g) {
    const int32_t z = w.Z(n, g);
    int32_t sum = 0;
    for (int64_t k = g * w.group_size; k < (g + 1) * w.group_size; ++k) {
      sum += static_cast<int32_t>(row.qa[k]) * (w.U(n, k) - z);
    }
    acc[g] = sum;
  }
}

// Per token: y = sa * (sum over g = 0..G-1 in order of (s[g] * (float)acc[g]))
// Per group: y = sum over g = 0..G-1 in order of (s[g] * (sa[g] * acc[g]))
// plus bias; each product and sum rounded to f32 separately (no FMA).
float Da8w4OutputRef(const CanonicalWeights& w, const QuantizedRow& row,
                     int64_t n) {
  std::vector<int32_t> acc(static_cast<size_t>(w.groups));
  Da8w4GroupAccRef(w, row, n, acc.data());
  const bool per_group = !row.group_scales.empty();
  float sum = 0.0f;
  for (int64_t g = 0; g < w.groups; ++g) {
    float a = static_cast<float>(acc[g]);
    if (per_group) a = row.group_scales[g] * a;
    sum += w.S(n, g) * a;
  }
  const float y = per_group ? sum : row.scale * sum;
  return w.bias.empty() ? y : y + w.bias[n];
}

float W4a16OutputRef(const CanonicalWeights& w, const void* x_row,
                     DType act_dtype, int64_t n, Numerics numerics) {
  const std::vector<float> x = WidenRow(x_row, act_dtype, w.k);
  return W4a16OutputF32(w, x.data(), n, numerics);
}

const void* ActOrderRow(const void* x_row, DType act_dtype,
                        const std::vector<int32_t>& k_perm,
                        std::vector<uint8_t>* storage) {
  if (k_perm.empty()) return x_row;
  const size_t esize = DTypeSize(act_dtype);
  storage->resize(k_perm.size() * esize);
  for (size_t j = 0; j < k_perm.size(); ++j) {
    std::memcpy(storage->data() + j * esize,
                static_cast<const char*>(x_row) + k_perm[j] * esize, esize);
  }
  return storage->data();
}

void RunReference(const LayerDesc& desc, const CanonicalWeights& w,
                  const RunArgs& args) {
  PreparedRows rows = MakePreparedRows(desc, args.m);
  for (int64_t i = 0; i < args.m; ++i) {
    PrepareRow(desc, w, args, i, &rows);
    ComputeRowCols(desc, w, args, rows, i, 0, desc.out_n());
  }
}

std::unique_ptr<LinearKernel> MakeReferenceKernel(const LayerDesc& desc,
                                                  CanonicalWeights w,
                                                  std::string reason) {
  std::string name =
      desc.mode == Mode::kDA8W4 ? "reference_da8w4" : "reference_w4a16";
  if (!reason.empty()) name += " (" + reason + ")";
  return std::make_unique<ReferenceKernel>(desc, std::move(w), std::move(name));
}

}  // namespace w4jit::internal
