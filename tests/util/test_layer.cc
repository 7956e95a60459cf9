#include "tests/util/test_layer.h"

#include "absl/strings/str_cat.h"

namespace w4jit::testing {

LayerDesc KernelTestDesc(Mode mode, int64_t n, int64_t k, int64_t group_size,
                         WeightType weight_type, DType act, DType out,
                         bool bias) {
  LayerDesc d;
  d.n = n;
  d.k = k;
  d.group_size = group_size;
  d.weight_type = weight_type;
  d.mode = mode;
  d.scale_dtype = DType::kBF16;
  d.act_dtype = act;
  d.out_dtype = out;
  d.has_bias = bias;
  d.bias_dtype = DType::kF32;
  return d;
}

::testing::AssertionResult RunAndCheck(const Layer& layer,
                                       const internal::CanonicalWeights& w,
                                       int64_t m, const std::vector<uint8_t>& x,
                                       int64_t ldx, int64_t ldy) {
  const check::CheckResult r = check::CheckRun(layer, w, m, x.data(), ldx, ldy);
  if (r.ok()) return ::testing::AssertionSuccess();
  if (!r.ran) return ::testing::AssertionFailure() << r.report;
  return ::testing::AssertionFailure()
         << r.bad << " bad outputs for " << Describe(layer.desc()) << " m=" << m
         << " ldx=" << ldx << " ldy=" << ldy << " kernels="
         << (layer.kernel_names().empty() ? "?" : layer.kernel_names()[0])
         << ":\n"
         << r.report;
}

}  // namespace w4jit::testing
