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

at::Tensor RunLayer(const char* op, const Layer& layer, const at::Tensor& x,
                    c10::ArrayRef<at::Tensor> operands, const at::Tensor* out,
                    const LayerRunOptions& options) {
  const LayerDesc& d = layer.desc();
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = d.out_n();
  const at::ScalarType out_type = ToScalarType(d.out_dtype);
  at::Tensor y;
  if (out != nullptr) {
    CheckCpu(op, "out", *out);
    TORCH_CHECK(out->scalar_type() == out_type, op, ": out has dtype ",
                out->scalar_type(), " but the result is ", out_type);
    TORCH_CHECK(out->sizes() == c10::IntArrayRef(out_sizes), op,
                ": out has shape ", ShapeString(*out), " but the result is ",
                c10::IntArrayRef(out_sizes));
    TORCH_CHECK(out->is_contiguous(), op, ": out must be contiguous");
    y = *out;
  } else {
    y = at::empty(out_sizes, x.options().dtype(out_type));
  }
  const int64_t m = x.numel() / d.k;
  TORCH_CHECK(static_cast<int>(operands.size()) == d.epilogue.num_binary, op,
              ": ", operands.size(), " epilogue operands for ",
              d.epilogue.num_binary, " binary post-ops");
  EpilogueInputs in;
  std::vector<at::Tensor> keep;
  static const char* kNames[2] = {"binary operand 0", "binary operand 1"};
  for (size_t i = 0; i < operands.size(); ++i) {
    const at::Tensor& a = operands[i];
    CheckCpu(op, kNames[i], a);
    TORCH_CHECK(a.scalar_type() == ToScalarType(d.epilogue.binary[i].dtype), op,
                ": ", kNames[i], " has dtype ", a.scalar_type(),
                " but the layer was built for ",
                ToScalarType(d.epilogue.binary[i].dtype));
    TORCH_CHECK(a.sizes() == c10::IntArrayRef(out_sizes), op, ": ", kNames[i],
                " has shape ", ShapeString(a), " but must be the output's ",
                c10::IntArrayRef(out_sizes));
    keep.push_back(a.contiguous());
    in.data[i] = keep.back().data_ptr();
    in.ld[i] = d.out_n();
  }
  if (m == 0) return y;
  at::Tensor rows = x;
  int64_t ldx = RowStride(x, d.k);
  if (ldx < 0) {
    rows = x.contiguous();
    ldx = d.k;
  }
  absl::Status s =
      layer.Run(m, rows.data_ptr(), ldx, y.data_ptr(), d.out_n(), in, options);
  TORCH_CHECK(s.ok(), op, ": ", std::string(s.message()));
  return y;
}

}  // namespace w4jit::torch_ext
