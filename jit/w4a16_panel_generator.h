// W4A16 panel microkernel (family kW4a16Panel): an MR x NR f32 FMA tile
// over a dequantized panel (W4a16DequantGenerator) for all rows of an M
// block, accumulating over one K block. Partial sums of earlier K blocks
// come from, and go back to, an f32 scratch tile; the last K block adds the
// bias and writes y in its dtype.
//
// Built from a W4a16PanelConfig (below), its kernel-cache key; named
// "w4a16panel_..." (act f32: the PackRowsF32 rows; k = the stride).
#ifndef W4JIT_JIT_W4A16_PANEL_GENERATOR_H_
#define W4JIT_JIT_W4A16_PANEL_GENERATOR_H_

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

struct W4a16PanelArgs {
  // Bits of `flags`.
  static constexpr int64_t kLoadAcc = 1;  // start from the scratch tile
  static constexpr int64_t kFinal = 2;    // add bias, write y (not scratch)
  const float* a;       // PackRowsF32 rows of the M block, at k = 0
  int64_t a_row_bytes;  // K * 4: a group of r packed rows spans r * this
  int64_t k0;           // first k of this K block
  int64_t kc;           // k in this K block: even, >= 2
  const float* panel;   // [kc][NB] f32 at the tile's first column
  int64_t m;            // rows of the M block, >= 1
  float* acc;           // scratch [m][NB] f32 at the tile's first column
  void* y;              // y at (first row, tile's first column)
  int64_t ldy_bytes;
  const float* bias;  // padded bias at the tile's first column, or null
  int64_t flags;
  // Binary post-op operands (config.epilogue) at (first row, the tile's first
  // output column), and their row strides in bytes.
  const void* ep[2];
  int64_t ep_ld_bytes[2];
};

// What one panel microkernel is specialised for.
struct W4a16PanelConfig {
  IsaTier isa = IsaTier::kAvx2;  // zmm where it has IsaFeature::kAvx512
  DType out_dtype = DType::kF32;
  bool bias = false;
  // Rows per register tile (the last M % mr rows get a tile of their own
  // height).
  int mr = 1;
  int nr = 0;          // tile width in columns (a multiple of the vector)
  int64_t stride = 0;  // NB: row stride in columns of panel and scratch
  // Columns of the tile that exist in y (nr, or fewer for the layer's last
  // columns): nothing past them is written.
  int64_t n = 0;
  // Applied in the final store (jit/epilogue_emit.h). With silu_mul vector
  // pairs (2i, 2i + 1) of the tile are (gate, up) columns and out_n is the
  // number of output columns of the tile (nr / 2, or fewer).
  Epilogue epilogue;
  int64_t out_n = 0;
  // Only named ("s4fz"): the layer has float zero points; the code does
  // not depend on it.
  bool float_zero = false;

  // The kernel-cache key is the config (dispatch/config_key.h): every
  // field, with those that do not change the code here made canonical.
  template <class Self>
  static auto Fields(Self& c) {
    return std::tie(c.isa, c.out_dtype, c.bias, c.mr, c.nr, c.stride, c.n,
                    c.epilogue, c.out_n, c.float_zero);
  }
  // out_n is 0 without silu_mul.
  W4a16PanelConfig Canonical() const;
  // The parts of the kernel's name (dispatch/kernel_key.h), from the
  // canonical config: what Fields() is to the cache key, NameParts() is to
  // the name.
  KernelName NameParts() const;
  // The kernel's name ("{family}_..._{tier}").
  std::string name() const { return NameParts().str(); }
  bool operator==(const W4a16PanelConfig& o) const {
    return ConfigKeyEqual(*this, o);
  }
  bool operator!=(const W4a16PanelConfig& o) const { return !(*this == o); }
  template <class H>
  friend H AbslHashValue(H h, const W4a16PanelConfig& c) {
    return ConfigKeyHash(std::move(h), c);
  }
};
static_assert(CheckConfigFieldsListed<W4a16PanelConfig>());

absl::Status CheckW4a16PanelConfig(const W4a16PanelConfig& config);

class W4a16PanelGenerator final : public Generator {
 public:
  using Fn = void (*)(const W4a16PanelArgs*);
  explicit W4a16PanelGenerator(const W4a16PanelConfig& config);

 protected:
  void Generate() override;

 private:
  void EmitTile(int mr);
  void EmitK(const W4a16PanelPlan& plan, int k);
  // The final store with a fused epilogue: the accumulators go to the
  // scratch tile first, so that the epilogue has every register.
  void EmitEpilogueStore(const W4a16PanelPlan& plan);

  W4a16PanelConfig config_;
  Epilogue epilogue_;
  VecEmitter vec_;
  ConstPool pool_;
  int lanes_;
  int nv_;
  int64_t stride_;  // NB
};

}  // namespace w4jit::internal

#endif  // W4JIT_JIT_W4A16_PANEL_GENERATOR_H_
