#include "torch/checkpoint_tensors.h"

#include <c10/util/Exception.h>

#include <algorithm>

#include "torch/tensor_checks.h"

namespace w4jit::torch_ext {
namespace {

// N and K from the weight's shape in `format`.
void WeightDims(const char* op, WeightFormat f, const at::Tensor& q, int64_t* n,
                int64_t* k) {
  CheckDim(op, "qweight", q, 2);
  switch (f) {
    case WeightFormat::kUnpackedInt8:
      CheckDType(op, "qweight", q, {at::kChar});
      *n = q.size(0);
      *k = q.size(1);
      return;
    case WeightFormat::kZentorchInt32:
    case WeightFormat::kCompressedTensors:
      CheckDType(op, "qweight", q, {at::kInt});
      *n = q.size(0);
      *k = q.size(1) * 8;
      return;
    case WeightFormat::kGptqV1:
    case WeightFormat::kGptqV2:
      CheckDType(op, "qweight", q, {at::kInt});
      *n = q.size(1);
      *k = q.size(0) * 8;
      return;
    case WeightFormat::kAwqGemm:
      CheckDType(op, "qweight", q, {at::kInt});
      *n = q.size(1) * 8;
      *k = q.size(0);
      return;
    case WeightFormat::kTinygemmInt4Pack:
      // Not a checkpoint format here (ParseWeightFormat never returns it):
      // torchao checkpoints go through woq_repack_from_int4pack +
      // woq_linear.
      TORCH_CHECK(false, op,
                  ": tinygemm int4pack weights are taken by "
                  "woq_repack_from_int4pack + woq_linear");
  }
}

// Expected [rows, cols] of scales and of zero points for `format`.
struct GroupShapes {
  int64_t scale_rows, scale_cols;
  int64_t zp_rows, zp_cols;
  at::ScalarType zp_dtype;
};

GroupShapes ShapesFor(WeightFormat f, int64_t n, int64_t g, bool groups_major) {
  switch (f) {
    case WeightFormat::kUnpackedInt8:
    case WeightFormat::kZentorchInt32:
      return groups_major ? GroupShapes{g, n, g, n, at::kChar}
                          : GroupShapes{n, g, n, g, at::kChar};
    case WeightFormat::kCompressedTensors:
      return {n, g, n / 8, g, at::kInt};
    default:  // GPTQ and AWQ: scales [G, N], zeros packed along N
      return {g, n, g, n / 8, at::kInt};
  }
}

// Whether dim 0 of the scales counts groups (else dim 1), as in ShapesFor.
bool GroupsFirst(WeightFormat f, bool groups_major) {
  if (f == WeightFormat::kCompressedTensors) return false;
  if (f == WeightFormat::kUnpackedInt8 || f == WeightFormat::kZentorchInt32) {
    return groups_major;
  }
  return true;
}

void CheckShape2(const char* op, const char* name, const at::Tensor& t,
                 int64_t rows, int64_t cols, const char* why) {
  CheckCpu(op, name, t);
  CheckDim(op, name, t, 2);
  CheckSize(op, name, t, 0, rows, why);
  CheckSize(op, name, t, 1, cols, why);
}

}  // namespace

bool Present(const c10::optional<at::Tensor>& t) {
  return t.has_value() && t->defined();
}

WeightsView CheckpointTensors::view() const {
  WeightsView v;
  v.format = format;
  v.qweight = qweight.data_ptr();
  v.scales = scales.data_ptr();
  v.zero_points = zero_points.defined() ? zero_points.data_ptr() : nullptr;
  v.g_idx = g_idx.defined() ? g_idx.data_ptr<int32_t>() : nullptr;
  v.bias = bias.defined() ? bias.data_ptr() : nullptr;
  v.groups_major = groups_major;
  v.scale_groups = scale_groups;
  return v;
}

CheckpointTensors CheckCheckpoint(const char* op, WeightFormat f,
                                  const at::Tensor& qweight,
                                  const at::Tensor& scales,
                                  const c10::optional<at::Tensor>& zero_points,
                                  const c10::optional<at::Tensor>& g_idx,
                                  const c10::optional<at::Tensor>& bias,
                                  int64_t group_size, bool groups_major,
                                  LayerDesc* d) {
  CheckCpu(op, "qweight", qweight);
  WeightDims(op, f, qweight, &d->n, &d->k);
  TORCH_CHECK(d->n > 0 && d->k > 0, op, ": qweight has shape ",
              ShapeString(qweight), ", which gives N = ", d->n, ", K = ", d->k,
              "; both must be > 0");
  TORCH_CHECK(group_size == -1 || (group_size > 0 && d->k % group_size == 0),
              op, ": group_size = ", group_size,
              " must be -1 (per-channel) or a positive divisor of K = ", d->k);
  d->group_size = group_size;
  // With g_idx, the scales may be a whole checkpoint's while qweight is a
  // K-shard of it (row-parallel tensor parallelism): take their group
  // count where it is more than K / group_size.
  int64_t groups = d->groups();
  if (Present(g_idx) && scales.dim() == 2) {
    groups =
        std::max(groups, scales.size(GroupsFirst(f, groups_major) ? 0 : 1));
  }
  const GroupShapes shapes = ShapesFor(f, d->n, groups, groups_major);

  CheckShape2(op, "scales", scales, shapes.scale_rows, shapes.scale_cols,
              "from N, K and group_size in this format");
  CheckDType(op, "scales", scales, {at::kFloat, at::kBFloat16, at::kHalf});
  d->scale_dtype = ToDType(scales.scalar_type());
  d->weight_type = Present(zero_points) ? WeightType::kU4 : WeightType::kS4;
  if (Present(zero_points)) {
    TORCH_CHECK(shapes.zp_dtype == at::kChar || d->n % 8 == 0, op,
                ": N = ", d->n, " must be a multiple of 8 for ", ToString(f),
                " zero points (8 per int32 along N)");
    CheckShape2(op, "zero_points", *zero_points, shapes.zp_rows, shapes.zp_cols,
                "from N and group_size in this format");
    CheckDType(op, "zero_points", *zero_points, {shapes.zp_dtype});
  }
  if (Present(g_idx)) {
    // Act-order (runtime/formats/act_order.h): every format but AWQ.
    TORCH_CHECK(f != WeightFormat::kAwqGemm, op,
                ": g_idx (act-order) is not meaningful for ", ToString(f),
                ", which has no act-order");
    CheckCpu(op, "g_idx", *g_idx);
    CheckDim(op, "g_idx", *g_idx, 1);
    CheckDType(op, "g_idx", *g_idx, {at::kInt});
    CheckSize(op, "g_idx", *g_idx, 0, d->k, "K");
  }
  CheckpointTensors t;
  t.format = f;
  t.groups_major = groups_major;
  if (groups != d->groups()) t.scale_groups = groups;
  d->has_bias = Present(bias);
  if (d->has_bias) {
    CheckCpu(op, "bias", *bias);
    CheckDim(op, "bias", *bias, 1);
    CheckDType(op, "bias", *bias, {at::kFloat, at::kBFloat16, at::kHalf});
    CheckSize(op, "bias", *bias, 0, d->n, "N");
    t.bias = LayerBias(*bias);
    d->bias_dtype = ToDType(t.bias.scalar_type());
  }
  t.qweight = qweight.contiguous();
  t.scales = scales.contiguous();
  if (Present(zero_points)) t.zero_points = zero_points->contiguous();
  if (Present(g_idx)) t.g_idx = g_idx->contiguous();
  return t;
}

}  // namespace w4jit::torch_ext
