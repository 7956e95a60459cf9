// Dispatch of ImportWeights / ExportWeights to the format codecs, and the
// parts every format shares: shape of CanonicalWeights, bias, g_idx
// (act-order, runtime/formats/act_order.h), consistency of weights handed
// to an exporter.
#include "runtime/formats/import.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/numeric.h"
#include "runtime/formats/act_order.h"
#include "runtime/formats/common.h"
#include "runtime/validate.h"

namespace w4jit::internal {
namespace {

struct Codec {
  absl::Status (*import)(const LayerDesc&, const WeightsView&,
                         CanonicalWeights*);
  absl::Status (*export_to)(const LayerDesc&, const CanonicalWeights&,
                            OwnedCheckpoint*);
};

// The codec of each format, indexed by the enum value (types.hpp numbers
// them 0..6), or nullptr for values outside the enum.
const Codec* CodecOf(WeightFormat f) {
  static constexpr Codec kCodecs[] = {
      {ImportUnpackedInt8, ExportUnpackedInt8},            // kUnpackedInt8
      {ImportZentorchInt32, ExportZentorchInt32},          // kZentorchInt32
      {ImportCompressedTensors, ExportCompressedTensors},  // kCompressedTensors
      {ImportGptq, ExportGptq},                            // kGptqV1
      {ImportGptq, ExportGptq},                            // kGptqV2
      {ImportAwqGemm, ExportAwqGemm},                      // kAwqGemm
      {ImportTinygemmInt4Pack, ExportTinygemmInt4Pack},    // kTinygemmInt4Pack
  };
  const int i = static_cast<int>(f);
  if (i < 0 || i >= static_cast<int>(std::size(kCodecs))) return nullptr;
  return &kCodecs[i];
}

absl::Status UnknownFormat(WeightFormat f) {
  return absl::InvalidArgumentError(
      absl::StrFormat("weights.format = %d is not a known WeightFormat (0..6)",
                      static_cast<int>(f)));
}

// g_idx (act-order) is GPTQ's, and compressed-tensors' weight_g_idx; the
// unpacked formats take one too, since they are what a host converts such
// checkpoints into. AWQ has no act-order.
bool TakesGroupIndex(WeightFormat f) {
  return f != WeightFormat::kAwqGemm && f != WeightFormat::kTinygemmInt4Pack;
}

// Float zero points come as a float tensor of their own: the unpacked and
// zentorch formats take one beside their weights, tinygemm has one. The
// packed-zero formats (GPTQ, AWQ, compressed-tensors) have integer zeros.
bool TakesFloatZeros(WeightFormat f) {
  return f == WeightFormat::kUnpackedInt8 ||
         f == WeightFormat::kZentorchInt32 ||
         f == WeightFormat::kTinygemmInt4Pack;
}

absl::Status CheckZeroDomain(const LayerDesc& desc, WeightFormat f) {
  if (desc.zero_point_domain == ZeroPointDomain::kFloat &&
      !TakesFloatZeros(f)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "zero_point_domain = float: the %s format stores integer zero "
        "points (float ones: unpacked-int8, zentorch-int32, "
        "tinygemm-int4pack)",
        ToString(f)));
  }
  return absl::OkStatus();
}

// What an exporter may rely on: `w` has the layer's shape and describes
// weights the layer type can hold.
absl::Status CheckConsistent(const LayerDesc& desc, const CanonicalWeights& w) {
  const CanonicalWeights want = CanonicalShape(desc);
  if (w.n != want.n || w.k != want.k || w.group_size != want.group_size ||
      w.groups != want.groups || w.asymmetric != want.asymmetric ||
      w.float_zeros.size() != want.float_zeros.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weights (n = %d, k = %d, group_size = %d, groups = %d, asymmetric = "
        "%d) do not match the layer (n = %d, k = %d, group_size = %d, groups "
        "= %d, weight_type = %s, zero_point_domain = %s)",
        w.n, w.k, w.group_size, w.groups, w.asymmetric, want.n, want.k,
        want.group_size, want.groups, ToString(desc.weight_type),
        ToString(desc.zero_point_domain)));
  }
  const size_t ng = static_cast<size_t>(w.n * w.groups);
  if (w.u.size() != static_cast<size_t>(w.n * w.k) || w.scales.size() != ng ||
      w.zeros.size() != ng ||
      w.bias.size() != (desc.has_bias ? static_cast<size_t>(w.n) : 0)) {
    return absl::InvalidArgumentError(
        "weights have vectors of the wrong size for the layer");
  }
  for (size_t i = 0; i < w.u.size(); ++i) {
    if (w.u[i] > 15) {
      return absl::InvalidArgumentError(
          absl::StrFormat("weights.u[%d] = %d is outside [0, 15]", i, w.u[i]));
    }
  }
  if (absl::Status s = CheckActOrder(w); !s.ok()) return s;
  for (size_t i = 0; i < ng; ++i) {
    if (w.zeros[i] > 15 ||
        ((!w.asymmetric || w.float_zero()) && w.zeros[i] != 8)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weights.zeros[%d] = %d is not %s", i, w.zeros[i],
          w.float_zero() ? "8 (float zero points are in float_zeros)"
          : w.asymmetric ? "in [0, 15]"
                         : "8 (s4 layers have no zero points)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

CanonicalWeights CanonicalShape(const LayerDesc& desc) {
  CanonicalWeights w;
  w.n = desc.n;
  w.k = desc.k;
  w.group_size = desc.effective_group_size();
  w.groups = desc.groups();
  w.asymmetric = desc.weight_type == WeightType::kU4;
  if (desc.zero_point_domain == ZeroPointDomain::kFloat) {
    // Sized so that CheckConsistent can compare; importers fill it.
    w.float_zeros.assign(static_cast<size_t>(w.n * w.groups), 0.0f);
  }
  return w;
}

WeightsView OwnedCheckpoint::view() const {
  WeightsView v;
  v.format = format;
  v.qweight = qweight.empty() ? nullptr : qweight.data();
  v.scales = scales.empty() ? nullptr : scales.data();
  v.zero_points = zero_points.empty() ? nullptr : zero_points.data();
  v.g_idx = g_idx.empty() ? nullptr : g_idx.data();
  v.bias = bias.empty() ? nullptr : bias.data();
  v.groups_major = groups_major;
  return v;
}

absl::StatusOr<CanonicalWeights> ImportWeights(const LayerDesc& desc,
                                               const WeightsView& view,
                                               LayerDesc* kernel_desc) {
  // Layer::Create checks these too; repeated so that direct callers (tests,
  // tools) get the same errors instead of undefined behaviour.
  if (absl::Status s = ValidateDesc(desc); !s.ok()) return s;
  if (absl::Status s = ValidateWeightsPointers(desc, view); !s.ok()) return s;
  const Codec* codec = CodecOf(view.format);
  if (codec == nullptr) return UnknownFormat(view.format);
  if (absl::Status s = CheckZeroDomain(desc, view.format); !s.ok()) return s;
  if (view.g_idx != nullptr && !TakesGroupIndex(view.format)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "weights.g_idx is given but the %s format has no g_idx (AWQ has no "
        "act-order)",
        ToString(view.format)));
  }
  if (kernel_desc != nullptr) *kernel_desc = desc;
  // A K-shard of an act-order checkpoint: scales of the whole checkpoint.
  const bool shard =
      view.scale_groups != 0 && view.scale_groups != desc.groups();
  if (shard) {
    // ValidateWeightsPointers has checked scale_groups > groups and g_idx.
    if (kernel_desc == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weights.scale_groups = %d (a K-shard of an act-order checkpoint) "
          "is taken by w4jit::Layer only, not by this importer",
          view.scale_groups));
    }
    if (absl::Status s =
            CheckShardGroupIndex(view.g_idx, desc.k, view.scale_groups);
        !s.ok()) {
      return s;
    }
  }
  std::vector<int32_t> perm;
  if (view.g_idx != nullptr && !shard) {
    absl::StatusOr<std::vector<int32_t>> p =
        ActOrderPermutation(desc, view.g_idx);
    if (!p.ok()) return p.status();
    perm = *std::move(p);
  }

  CanonicalWeights w = CanonicalShape(desc);
  if (shard) {
    // Read the whole checkpoint's scales and zero points.
    w.groups = view.scale_groups;
    if (w.float_zero()) {
      w.float_zeros.assign(static_cast<size_t>(w.n * w.groups), 0.0f);
    }
  }
  if (absl::Status s = codec->import(desc, view, &w); !s.ok()) return s;
  if (!w.asymmetric || w.float_zero()) {
    // s4 is u4 with every zero point 8 (numerics.md); formats without zero
    // points leave this to us. Float zero points: w = (u - 8) * s + zf.
    w.zeros.assign(static_cast<size_t>(w.n * w.groups), 8);
  }
  if (shard) {
    const int64_t group_bytes =
        static_cast<int64_t>(DTypeSize(desc.scale_dtype)) +
        (w.asymmetric ? 1 : 0);
    if (absl::Status s = RegroupShard(view.g_idx, desc.effective_group_size(),
                                      group_bytes, &w);
        !s.ok()) {
      return s;
    }
    kernel_desc->k = w.k;
    kernel_desc->group_size = w.group_size;
  } else {
    ApplyActOrder(std::move(perm), &w);
  }
  if (desc.has_bias) ReadBias(desc, view.bias, &w);
  return w;
}

absl::StatusOr<OwnedCheckpoint> ExportWeights(const LayerDesc& desc,
                                              const CanonicalWeights& w,
                                              WeightFormat format,
                                              bool groups_major) {
  if (absl::Status s = ValidateDesc(desc); !s.ok()) return s;
  const Codec* codec = CodecOf(format);
  if (codec == nullptr) return UnknownFormat(format);
  if (absl::Status s = CheckZeroDomain(desc, format); !s.ok()) return s;
  if (absl::Status s = CheckConsistent(desc, w); !s.ok()) return s;

  OwnedCheckpoint ckpt;
  ckpt.format = format;
  ckpt.groups_major = groups_major;
  if (!w.k_perm.empty()) {
    // Act-order: the checkpoint holds K in its original order plus g_idx.
    if (!TakesGroupIndex(format)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "weights have an act-order permutation, which the %s format cannot "
          "hold (no g_idx)",
          ToString(format)));
    }
    const CanonicalWeights unpermuted = UndoActOrder(w, &ckpt.g_idx);
    if (absl::Status s = codec->export_to(desc, unpermuted, &ckpt); !s.ok()) {
      return s;
    }
  } else if (absl::Status s = codec->export_to(desc, w, &ckpt); !s.ok()) {
    return s;
  }
  if (desc.has_bias) {
    if (absl::Status b = WriteBias(desc, w, &ckpt.bias); !b.ok()) return b;
  }
  return ckpt;
}

}  // namespace w4jit::internal
