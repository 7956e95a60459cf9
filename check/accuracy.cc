#include "check/accuracy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "base/numeric.h"
#include "check/layer_check.h"

namespace w4jit::check {

std::vector<uint8_t> OutlierActivations(const LayerDesc& desc, int64_t m,
                                        int64_t ldx, const OutlierSpec& spec,
                                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> channels(static_cast<size_t>(desc.k));
  std::iota(channels.begin(), channels.end(), int64_t{0});
  std::shuffle(channels.begin(), channels.end(), rng);
  std::vector<float> gain(static_cast<size_t>(desc.k), 1.0f);
  const int64_t count = std::clamp<int64_t>(spec.outliers, 0, desc.k);
  for (int64_t i = 0; i < count; ++i) gain[channels[i]] = spec.scale;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint8_t> x(static_cast<size_t>(m * ldx) *
                         internal::DTypeSize(desc.act_dtype));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldx; ++j) {
      const float v = j < desc.k ? normal(rng) * gain[j] : 0.0f;
      SetActivation(desc, &x, ldx, i, j, v);
    }
  }
  return x;
}

double RelativeL2Error(DType out_dtype, const void* got,
                       const std::vector<double>& want) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double g =
        internal::LoadAsF32(got, out_dtype, static_cast<int64_t>(i));
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    err += (g - want[i]) * (g - want[i]);
    ref += want[i] * want[i];
  }
  if (ref == 0.0) {
    return err == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  }
  return std::sqrt(err / ref);
}

absl::StatusOr<double> LayerRelativeError(const Layer& layer,
                                          const internal::CanonicalWeights& w,
                                          int64_t m, const void* x,
                                          int64_t ldx) {
  const LayerDesc& desc = layer.desc();
  if (!desc.epilogue.empty()) {
    return absl::InvalidArgumentError(
        "LayerRelativeError: the layer has an epilogue");
  }
  std::vector<uint8_t> y(static_cast<size_t>(m * desc.n) *
                         internal::DTypeSize(desc.out_dtype));
  if (absl::Status s = layer.Run(m, x, ldx, y.data(), desc.n); !s.ok()) {
    return s;
  }
  return RelativeL2Error(desc.out_dtype, y.data(),
                         DequantMatmulF64(desc, w, m, x, ldx));
}

}  // namespace w4jit::check
