// Embedding w4jit from C++: a 2x8 s4 layer, one row of x, checked result.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "w4jit/w4jit.hpp"

int main() {
  w4jit::LayerDesc desc;  // per-channel s4, f32 scales
  desc.n = 2;
  desc.k = 8;
  desc.act_dtype = desc.out_dtype = w4jit::DType::kF32;
  std::vector<int8_t> q = {1, 1, 1, 1, 1, 1, 1, 1,   // row 0: sum of x
                           -8, 0, 0, 0, 0, 0, 0, 7};  // row 1: -8 x0 + 7 x7
  std::vector<float> scales = {0.5f, 1.0f};           // [G=1, N=2]
  w4jit::WeightsView w;
  w.qweight = q.data();
  w.scales = scales.data();
  auto layer = w4jit::Layer::Create(desc, w);
  if (!layer.ok()) return std::printf("%s\n", layer.status().ToString().c_str()), 1;
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8}, y(2);
  if (!(*layer)->Run(1, x.data(), 8, y.data(), 2).ok()) return 1;
  std::printf("y = %g %g\n", y[0], y[1]);  // 18 48
  return (y[0] == 18.0f && y[1] == 48.0f) ? 0 : 1;
}
