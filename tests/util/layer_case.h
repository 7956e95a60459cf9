// A kernel-test layer named field by field, where the positional
// KernelTestDesc(mode, n, k, group, type, act, out, bias) is hard to read:
//
//   CheckLayer(LayerCase(Mode::kW4A16).N(72).K(256).Group(32).Bias(), ms);
//
// Defaults: s4 weights, per-channel (one group over K), bf16 in and out, no
// bias; bf16 scales and an f32 bias as KernelTestDesc has them.
#ifndef W4JIT_TESTS_UTIL_LAYER_CASE_H_
#define W4JIT_TESTS_UTIL_LAYER_CASE_H_

#include <cstdint>

#include "tests/util/test_layer.h"
#include "w4jit/types.hpp"

namespace w4jit::testing {

class LayerCase {
 public:
  explicit LayerCase(Mode mode) : mode_(mode) {}

  LayerCase& N(int64_t n) {
    n_ = n;
    return *this;
  }
  LayerCase& K(int64_t k) {
    k_ = k;
    return *this;
  }
  // Group size along K; -1 (the default) for per-channel.
  LayerCase& Group(int64_t group) {
    group_ = group;
    return *this;
  }
  LayerCase& Weights(WeightType type) {
    weight_type_ = type;
    return *this;
  }
  LayerCase& U4() { return Weights(WeightType::kU4); }
  LayerCase& In(DType act) {
    act_ = act;
    return *this;
  }
  LayerCase& Out(DType out) {
    out_ = out;
    return *this;
  }
  LayerCase& Bias(bool on = true) {
    bias_ = on;
    return *this;
  }

  LayerDesc desc() const {
    return KernelTestDesc(mode_, n_, k_, group_, weight_type_, act_, out_,
                          bias_);
  }
  operator LayerDesc() const { return desc(); }  // NOLINT: reads as a desc

 private:
  Mode mode_;
  int64_t n_ = 16;
  int64_t k_ = 64;
  int64_t group_ = -1;
  WeightType weight_type_ = WeightType::kS4;
  DType act_ = DType::kBF16;
  DType out_ = DType::kBF16;
  bool bias_ = false;
};

}  // namespace w4jit::testing

#endif  // W4JIT_TESTS_UTIL_LAYER_CASE_H_
