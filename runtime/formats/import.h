// Import of every supported checkpoint layout into CanonicalWeights, and
// export back (used by tests for round trips and by benchmarks to build
// checkpoints of any format).
#ifndef W4JIT_RUNTIME_FORMATS_IMPORT_H_
#define W4JIT_RUNTIME_FORMATS_IMPORT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/canonical_weights.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// A CanonicalWeights with the shape fields (n, k, group_size, groups,
// asymmetric) of `desc` set and its vectors empty.
CanonicalWeights CanonicalShape(const LayerDesc& desc);

// Reads `view` (format view.format) for a layer `desc` that has already
// passed ValidateDesc. Checks everything format-specific (K multiple of 8
// for int32-packed formats, N multiple of 8 where zero points are packed
// along N, zero points present exactly for u4, nibble and zero-point
// ranges, g_idx groups of exactly group_size members) and returns errors
// that name the bad value. A g_idx that is not k / group_size is applied
// as CanonicalWeights::k_perm (act-order).
// view.scale_groups > desc.groups() (a K-shard of an act-order checkpoint,
// WeightsView::scale_groups) is taken only with a non-null `kernel_desc`:
// the weights are regrouped (RegroupShard, act_order.h) and *kernel_desc
// is desc with the K and group_size of the result, which kernels are made
// for (x still has desc.k columns, read through k_perm). Otherwise
// *kernel_desc (if given) is desc.
// Never writes through the view's pointers.
absl::StatusOr<CanonicalWeights> ImportWeights(
    const LayerDesc& desc, const WeightsView& view,
    LayerDesc* kernel_desc = nullptr);

// A checkpoint in some format, owning its buffers; view() points into it.
struct OwnedCheckpoint {
  WeightFormat format = WeightFormat::kUnpackedInt8;
  std::vector<uint8_t> qweight;      // raw bytes of the qweight tensor
  std::vector<uint8_t> scales;       // raw bytes, desc.scale_dtype
  std::vector<uint8_t> zero_points;  // raw bytes, empty for s4
  std::vector<int32_t> g_idx;        // empty: none given
  std::vector<uint8_t> bias;         // raw bytes, desc.bias_dtype
  bool groups_major = true;
  WeightsView view() const;
};

// Writes `w` in `format` with scales in desc.scale_dtype (they must be
// exactly representable there) and bias in desc.bias_dtype. Weights with a
// k_perm are written in checkpoint order with the g_idx that describes it.
absl::StatusOr<OwnedCheckpoint> ExportWeights(const LayerDesc& desc,
                                              const CanonicalWeights& w,
                                              WeightFormat format,
                                              bool groups_major = true);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_FORMATS_IMPORT_H_
