#include "torch/run_layer.h"

#include <vector>

#include "torch/tensor_checks.h"

namespace w4jit::torch_ext {
namespace {

// The stride between consecutive rows of x viewed as [M, K], or -1 if the
// leading dims do not collapse to a single stride or rows overlap.
int64_t RowStride(const at::Tensor& x, int64_t k) {
  if (k > 1 && x.stride(-1) != 1) return -1;
  int64_t row = -1;
  int64_t next = -1;  // stride the next-outer non-trivial dim must have
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    if (x.size(d) == 1) continue;
    if (row < 0) {
      row = x.stride(d);
    } else if (x.stride(d) != next) {
      return -1;
    }
    next = x.stride(d) * x.size(d);
  }
  if (row < 0) return k;  // a single row
  return row >= k ? row : -1;
}

}  // namespace

at::Tensor RunLayer(const char* op, const Layer& layer, const at::Tensor& x) {
  const LayerDesc& d = layer.desc();
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = d.n;
  at::Tensor y =
      at::empty(out_sizes, x.options().dtype(ToScalarType(d.out_dtype)));
  const int64_t m = x.numel() / d.k;
  if (m == 0) return y;
  at::Tensor rows = x;
  int64_t ldx = RowStride(x, d.k);
  if (ldx < 0) {
    rows = x.contiguous();
    ldx = d.k;
  }
  absl::Status s = layer.Run(m, rows.data_ptr(), ldx, y.data_ptr(), d.n);
  TORCH_CHECK(s.ok(), op, ": ", std::string(s.message()));
  return y;
}

}  // namespace w4jit::torch_ext
