// Pieces shared by the checkpoint format codecs: int32 nibble access,
// shape checks, and the scale / zero-point / bias tensors whose meaning is
// the same in every format (only their layout differs).
#ifndef W4JIT_RUNTIME_FORMATS_COMMON_H_
#define W4JIT_RUNTIME_FORMATS_COMMON_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "runtime/canonical_weights.h"
#include "runtime/formats/import.h"
#include "w4jit/types.hpp"

namespace w4jit::internal {

// Layout of a tensor with one entry per (group g, output channel n).
enum class GroupLayout {
  kGroupsMajor,    // [G, N]: element (g, n) at g * N + n
  kChannelsMajor,  // [N, G]: element (g, n) at n * G + g
};

// WeightsView::groups_major of the unpacked-int8 and zentorch formats.
inline GroupLayout GroupLayoutOf(bool groups_major) {
  return groups_major ? GroupLayout::kGroupsMajor : GroupLayout::kChannelsMajor;
}

inline int64_t GroupOffset(GroupLayout layout, int64_t g, int64_t n,
                           int64_t num_n, int64_t num_g) {
  return layout == GroupLayout::kGroupsMajor ? g * num_n + n : n * num_g + g;
}

// Nibble i (bits 4i..4i+3) of 32-bit word `word_index` of a little-endian
// int32 tensor. Checkpoint buffers need not be 4-byte aligned: memcpy.
inline uint8_t GetNibble(const void* words, int64_t word_index, int i) {
  uint32_t w;
  std::memcpy(&w, static_cast<const char*>(words) + 4 * word_index, 4);
  return static_cast<uint8_t>((w >> (4 * i)) & 0xF);
}

// Sets nibble i of word `word_index` of `bytes` (sized by the caller) to
// the low 4 bits of v.
inline void SetNibble(std::vector<uint8_t>* bytes, int64_t word_index, int i,
                      uint8_t v) {
  uint32_t w;
  std::memcpy(&w, bytes->data() + 4 * word_index, 4);
  w = (w & ~(0xFu << (4 * i))) | (static_cast<uint32_t>(v & 0xF) << (4 * i));
  std::memcpy(bytes->data() + 4 * word_index, &w, 4);
}

// int32 [N, K/8] packed along K (zentorch, compressed-tensors): element
// (n, k) at nibble k % 8 of word (n, k / 8), holding u ^ flip (flip = 8
// turns u = q + 8 into a two's-complement q). K must be a multiple of 8.
void ReadPackedAlongK(const void* words, uint8_t flip, CanonicalWeights* w);
std::vector<uint8_t> WritePackedAlongK(const CanonicalWeights& w, uint8_t flip);

// Zero points int32 [G, N/8] packed along N (GPTQ, AWQ): element (g, n) at
// nibble pos[n % 8] of word (g, n / 8), holding (z - add) & 0xF (GPTQ v1
// stores zero - 1: add = 1). N must be a multiple of 8.
void ReadZerosAlongN(const void* words, const int pos[8], uint8_t add,
                     CanonicalWeights* w);
std::vector<uint8_t> WriteZerosAlongN(const CanonicalWeights& w,
                                      const int pos[8], uint8_t add);

// InvalidArgument unless `value` % 8 == 0, e.g. "K = 100 is not a multiple
// of 8, which the compressed-tensors format (8 nibbles per int32) needs".
// `dim` is "K" or "N"; `what` says which tensor is packed, e.g. "qzeros
// packed along N".
absl::Status RequireMultipleOf8(const char* dim, int64_t value,
                                WeightFormat format, const char* what);

// Scales: read as desc.scale_dtype in `layout`, widened exactly into
// w->scales. Write: narrowed to desc.scale_dtype, refusing values that are
// not exactly representable there.
void ReadScales(const LayerDesc& desc, const void* src, GroupLayout layout,
                CanonicalWeights* w);
absl::Status WriteScales(const LayerDesc& desc, const CanonicalWeights& w,
                         GroupLayout layout, std::vector<uint8_t>* out);

// int8 zero points (unpacked-int8 and zentorch formats), values in [0, 15].
absl::Status ReadInt8ZeroPoints(const void* src, GroupLayout layout,
                                CanonicalWeights* w);
std::vector<uint8_t> WriteInt8ZeroPoints(const CanonicalWeights& w,
                                         GroupLayout layout);

// Float zero points (ZeroPointDomain::kFloat) in desc.zero_point_dtype,
// widened exactly into w->float_zeros (refusing NaN and infinities), and
// back, refusing values not exactly representable there.
absl::Status ReadFloatZeroPoints(const LayerDesc& desc, const void* src,
                                 GroupLayout layout, CanonicalWeights* w);
absl::Status WriteFloatZeroPoints(const LayerDesc& desc,
                                  const CanonicalWeights& w, GroupLayout layout,
                                  std::vector<uint8_t>* out);
// The zero points of a u4 layer in its domain: int8 or float.
absl::Status ReadZeroPoints(const LayerDesc& desc, const void* src,
                            GroupLayout layout, CanonicalWeights* w);
absl::Status WriteZeroPoints(const LayerDesc& desc, const CanonicalWeights& w,
                             GroupLayout layout, std::vector<uint8_t>* out);

// Bias [N] in desc.bias_dtype (f32 or bf16) <-> w.bias.
void ReadBias(const LayerDesc& desc, const void* src, CanonicalWeights* w);
absl::Status WriteBias(const LayerDesc& desc, const CanonicalWeights& w,
                       std::vector<uint8_t>* out);

// Stores v as element i of `dst` in dtype t (bf16, f16 or f32); returns false
// if v is not exactly representable in t.
bool StoreExact(float v, DType t, void* dst, int64_t i);

// The checkpoint formats, one pair per file. Importers fill w->u, w->zeros
// (8 for s4 layers) and w->scales of a `w` whose shape fields are set;
// exporters fill ckpt->qweight, zero_points and scales. Both assume a
// validated desc and consistent `w`.
absl::Status ImportUnpackedInt8(const LayerDesc& desc, const WeightsView& v,
                                CanonicalWeights* w);
absl::Status ExportUnpackedInt8(const LayerDesc& desc,
                                const CanonicalWeights& w,
                                OwnedCheckpoint* ckpt);
absl::Status ImportZentorchInt32(const LayerDesc& desc, const WeightsView& v,
                                 CanonicalWeights* w);
absl::Status ExportZentorchInt32(const LayerDesc& desc,
                                 const CanonicalWeights& w,
                                 OwnedCheckpoint* ckpt);
absl::Status ImportCompressedTensors(const LayerDesc& desc,
                                     const WeightsView& v, CanonicalWeights* w);
absl::Status ExportCompressedTensors(const LayerDesc& desc,
                                     const CanonicalWeights& w,
                                     OwnedCheckpoint* ckpt);
// GPTQ v1 and v2 (v.format / ckpt->format says which).
absl::Status ImportGptq(const LayerDesc& desc, const WeightsView& v,
                        CanonicalWeights* w);
absl::Status ExportGptq(const LayerDesc& desc, const CanonicalWeights& w,
                        OwnedCheckpoint* ckpt);
absl::Status ImportAwqGemm(const LayerDesc& desc, const WeightsView& v,
                           CanonicalWeights* w);
absl::Status ExportAwqGemm(const LayerDesc& desc, const CanonicalWeights& w,
                           OwnedCheckpoint* ckpt);
absl::Status ImportTinygemmInt4Pack(const LayerDesc& desc, const WeightsView& v,
                                    CanonicalWeights* w);
absl::Status ExportTinygemmInt4Pack(const LayerDesc& desc,
                                    const CanonicalWeights& w,
                                    OwnedCheckpoint* ckpt);

}  // namespace w4jit::internal

#endif  // W4JIT_RUNTIME_FORMATS_COMMON_H_
