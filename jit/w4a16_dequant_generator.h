// W4A16 panel dequantizer (family kW4a16Dequant): turns a K-block of one
// packed column block (f32-FMA layout, jit/w4a16_layout.h) into a dense
// f32 panel [kc][NB] of (u - z) * s (float zero points, key.float_zero:
// (u - 8) * s + zf), which the panel microkernel then
// multiplies with every row of an M block. The decode is paid once per
// panel instead of once per row.
//
// Built from a W4a16DequantConfig (below), its kernel-cache key; named
// "w4a16dq_..." with n = nr = NB and k = the segment.
#ifndef W4JIT_JIT_W4A16_DEQUANT_GENERATOR_H_
#define W4JIT_JIT_W4A16_DEQUANT_GENERATOR_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "dispatch/config_key.h"
#include "dispatch/kernel_key.h"
#include "jit/emit_util.h"
#include "jit/generator.h"
#include "jit/w4a16_panel_plan.h"

namespace w4jit::internal {

struct W4a16DequantArgs {
  const uint8_t* w;     // packed weights of the block at the first k
  const uint8_t* meta;  // meta of the block at the group of the first k
  float* panel;         // out: [segments * segment][NB] f32
  int64_t segments;     // >= 1; the meta pointer advances one group each
};

// What one dequantizer is specialised for.
struct W4a16DequantConfig {
  IsaTier isa = IsaTier::kAvx2;  // zmm where it has IsaFeature::kAvx512
  WeightType weight_type = WeightType::kS4;
  bool float_zero = false;         // (u - 8) * s + zf
  DType meta_dtype = DType::kF32;  // 16-bit only without zero points
  int64_t group_size = 0;          // resolved (K for per-channel)
  bool per_channel = false;
  int nr = 0;  // NB, the packed block width in columns
  // The number of k that share one scale: the group, or the K block when
  // it is shorter than the group. The number of segments per call is a
  // runtime argument.
  int64_t segment = 0;
  // Numerics::kZentorch: each dequantized weight rounded to bf16 (nearest
  // even) before it is stored in the panel ("_wrbf16").
  bool round_weights_bf16 = false;

  // The kernel-cache key is the config (dispatch/config_key.h): every
  // field, with those that do not change the code here made canonical.
  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.isa, c.weight_type, c.float_zero, c.meta_dtype,
                    c.group_size, c.per_channel, c.nr, c.segment,
                    c.round_weights_bf16);
  }
  // Every field changes the code: the config itself.
  W4a16DequantConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const W4a16DequantConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const W4a16DequantConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const W4a16DequantConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<W4a16DequantConfig>());

absl::Status CheckW4a16DequantConfig(const W4a16DequantConfig& config);

class W4a16DequantGenerator final : public Generator {
 public:
  using Fn = void (*)(const W4a16DequantArgs*);
  explicit W4a16DequantGenerator(const W4a16DequantConfig& config);

 protected:
  void Generate() override;

 private:
  void EmitPairs(int pairs);

  W4a16DequantConfig config_;
  VecEmitter vec_;
  ConstPool pool_;
  int lanes_;
  int nv_;
  int64_t nb_;
  W4a16DequantPlan plan_;
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_DEQUANT_GENERATOR_H_
