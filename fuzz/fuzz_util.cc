#include "fuzz/fuzz_util.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "base/numeric.h"

namespace w4jit::fuzz {

void Fail(const std::string& what) {
  std::fprintf(stderr, "w4jit fuzz: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

TensorBytes BytesFor(const LayerDesc& d, WeightFormat format) {
  TensorBytes b;
  if (d.n <= 0 || d.k <= 0 || d.n > 4096 || d.k > 4096) return b;
  const int64_t g = d.groups() > 0 ? d.groups() : 1;
  const int64_t s = static_cast<int64_t>(internal::DTypeSize(d.scale_dtype));
  const int64_t ng = d.n * g;
  b.scales = ng * s;
  b.bias = d.n * 4;
  switch (format) {
    case WeightFormat::kUnpackedInt8:
      b.qweight = d.n * d.k;
      b.zeros = ng;
      break;
    case WeightFormat::kZentorchInt32:
      b.qweight = d.n * (d.k / 8) * 4;
      b.zeros = ng;
      break;
    case WeightFormat::kCompressedTensors:
      b.qweight = d.n * (d.k / 8) * 4;
      b.zeros = (d.n / 8) * g * 4;
      break;
    case WeightFormat::kGptqV1:
    case WeightFormat::kGptqV2:
      b.qweight = (d.k / 8) * d.n * 4;
      b.zeros = g * (d.n / 8) * 4;
      break;
    case WeightFormat::kAwqGemm:
      b.qweight = d.k * (d.n / 8) * 4;
      b.zeros = g * (d.n / 8) * 4;
      break;
    case WeightFormat::kTinygemmInt4Pack:
      b.qweight = d.n * ((d.k + 1) / 2);
      b.zeros = ng;
      break;
  }
  if (d.zero_point_domain == ZeroPointDomain::kFloat) {
    // Float zero points [G, N] or [N, G] in their dtype (4 bytes covers
    // any, and an invalid dtype is refused before they are read).
    b.zeros = ng * 4;
  }
  return b;
}

namespace {

std::vector<uint8_t> Take(FuzzedDataProvider* fdp, int64_t bytes) {
  std::vector<uint8_t> v =
      fdp->ConsumeBytes<uint8_t>(static_cast<size_t>(bytes));
  // Short input: repeat what there is (or a pattern), so the layer is
  // still complete.
  const size_t have = v.size();
  v.resize(static_cast<size_t>(std::max<int64_t>(bytes, 16)));
  for (size_t i = have; i < v.size(); ++i) {
    v[i] = have > 0 ? v[i % have] : static_cast<uint8_t>(i * 37 + 11);
  }
  return v;
}

}  // namespace

FuzzedCheckpoint MakeCheckpoint(FuzzedDataProvider* fdp, const LayerDesc& desc,
                                WeightFormat format) {
  const TensorBytes b = BytesFor(desc, format);
  FuzzedCheckpoint c;
  c.scales = Take(fdp, b.scales);
  c.zeros = Take(fdp, b.zeros);
  c.bias = Take(fdp, b.bias);
  if (fdp->ConsumeBool() && desc.k > 0 && desc.k <= 4096) {
    // g_idx: the identity, act-order (the identity with fuzzed swaps, so
    // every group keeps group_size members: accepted), or fuzzed (refused
    // unless it happens to be one of those).
    c.g_idx.resize(static_cast<size_t>(desc.k));
    const int kind = fdp->ConsumeIntegralInRange(0, 2);
    const int64_t gs =
        desc.effective_group_size() > 0 ? desc.effective_group_size() : 1;
    for (int64_t i = 0; i < desc.k; ++i) {
      c.g_idx[i] = kind < 2 ? static_cast<int32_t>(i / gs)
                            : fdp->ConsumeIntegral<int32_t>();
    }
    for (int swaps = kind == 1 ? fdp->ConsumeIntegralInRange(1, 64) : 0;
         swaps > 0; --swaps) {
      std::swap(c.g_idx[fdp->ConsumeIntegralInRange<int64_t>(0, desc.k - 1)],
                c.g_idx[fdp->ConsumeIntegralInRange<int64_t>(0, desc.k - 1)]);
    }
  }
  c.qweight = Take(fdp, b.qweight);  // last: the bulk of the bytes
  return c;
}

WeightsView FuzzedCheckpoint::view(WeightFormat format,
                                   bool groups_major) const {
  WeightsView v;
  v.format = format;
  v.qweight = qweight.data();
  v.scales = scales.data();
  v.zero_points = zeros.data();
  v.bias = bias.data();
  v.g_idx = g_idx.empty() ? nullptr : g_idx.data();
  v.groups_major = groups_major;
  return v;
}

double MaxAbs(const void* p, DType t, int64_t count) {
  double m = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double v = internal::LoadAsF32(p, t, i);
    if (!std::isfinite(v)) return std::numeric_limits<double>::infinity();
    m = std::max(m, std::fabs(v));
  }
  return m;
}

}  // namespace w4jit::fuzz
