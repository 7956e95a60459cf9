#include "runtime/w4a16/w4a16_kernel_lookup.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "runtime/kernel_cache.h"

namespace w4jit::internal {
namespace {

// The kernel's entry point; the kernel is held by `kernels` and named in
// its names.
template <class Fn>
absl::StatusOr<Fn> Entry(absl::StatusOr<std::shared_ptr<const Generator>> gen,
                         W4a16Kernels* kernels) {
  if (!gen.ok()) return gen.status();
  kernels->names.push_back((*gen)->name());
  kernels->held.push_back(*gen);
  return (*gen)->template entry<Fn>();
}

}  // namespace

std::vector<W4a16GemvConfig> W4a16Int4Configs(const W4a16Params& p,
                                              Flavor flavor,
                                              const W4a16GemvConfig& base) {
  W4a16GemvConfig small = base;
  small.mr = p.gemv_mr;
  small.tile_vectors = 0;
  std::vector<W4a16GemvConfig> out = {small};
  const bool tall_runs =
      flavor == Flavor::kBf16Dot || p.tall_min_m < p.gemm_min_m;
  W4a16GemvConfig tall = base;
  tall.mr = p.tall_mr;
  tall.tile_vectors = p.tall_vectors == p.block_vectors ? 0 : p.tall_vectors;
  if (tall_runs && tall != small) out.push_back(tall);
  return out;
}

absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16GemvKernel(
    const W4a16GemvConfig& config) {
  if (absl::Status s = CheckW4a16GemvConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(config, [config] {
    return std::make_unique<W4a16GemvGenerator>(config);
  });
}

absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16DequantKernel(
    const W4a16DequantConfig& config) {
  if (absl::Status s = CheckW4a16DequantConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(config, [config] {
    return std::make_unique<W4a16DequantGenerator>(config);
  });
}

absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16PanelKernel(
    const W4a16PanelConfig& config) {
  if (absl::Status s = CheckW4a16PanelConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(config, [config] {
    return std::make_unique<W4a16PanelGenerator>(config);
  });
}

absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16AmxKernel(
    const W4a16AmxConfig& config) {
  if (absl::Status s = CheckW4a16AmxConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(
      config, [config] { return std::make_unique<W4a16AmxGenerator>(config); });
}

absl::StatusOr<std::shared_ptr<const Generator>> GetW4a16AmxDecodeKernel(
    const W4a16AmxDecodeConfig& config) {
  if (absl::Status s = CheckW4a16AmxDecodeConfig(config); !s.ok()) return s;
  return GetOrCreateKernel(config, [config] {
    return std::make_unique<W4a16AmxDecodeGenerator>(config);
  });
}

int64_t W4a16AmxDecodeGroup(const W4a16Plan& plan, const W4a16Layout& l) {
  return l.groups() == 1 ? plan.amx_group : plan.group;
}

W4a16AmxDecodeConfig W4a16AmxDecodeConfigOf(const W4a16Plan& plan,
                                            const W4a16Layout& l) {
  W4a16AmxDecodeConfig c;
  c.u4 = l.asymmetric;
  c.nr = static_cast<int>(l.block_n());
  c.group_pairs = W4a16AmxDecodeGroup(plan, l) / 2;
  c.tile_group_pairs = plan.amx_group / 2;
  c.scaled = plan.amx_scaled;
  c.float_zero = l.float_zero;
  c.meta_dtype = l.meta_dtype;
  // Per channel every segment of K reads group 0's meta.
  c.per_channel = l.groups() == 1;
  c.prefetch = plan.p.prefetch_distance;
  return c;
}

bool W4a16AmxHasTail(const LayerDesc& desc, const W4a16Layout& l) {
  return desc.epilogue.silu_mul ? desc.out_n() % (l.block_n() / 2) != 0
                                : desc.n % l.block_n() != 0;
}

W4a16AmxConfig W4a16AmxConfigOf(const LayerDesc& desc, const W4a16Plan& plan,
                                const W4a16Layout& l, int rows, bool tail,
                                int row_blocks) {
  W4a16AmxConfig c;
  c.out_dtype = desc.out_dtype;
  c.bias = desc.has_bias;
  c.mr = rows;
  c.row_blocks = row_blocks;
  c.nr = static_cast<int>(l.block_n());
  c.n = c.nr;
  c.epilogue = desc.epilogue;
  if (desc.epilogue.silu_mul) {
    // Packed columns all exist (padding is zero); output columns: NB / 2
    // per block, fewer in the last.
    c.out_n = c.nr / 2;
    if (tail) c.out_n = desc.out_n() % c.out_n;
  } else if (tail) {
    c.n = desc.n % c.nr;
  }
  c.u4 = l.asymmetric;
  c.float_zero = l.float_zero && !plan.amx_scaled;
  c.meta_dtype = l.meta_dtype;
  c.group_size = plan.amx_group;
  c.per_channel = l.groups() == 1;
  c.scaled = plan.amx_scaled;
  return c;
}

absl::Status GetW4a16Kernels(const LayerDesc& desc, const W4a16Plan& plan,
                             const W4a16Layout& l, W4a16Kernels* kernels,
                             std::string* why_not) {
  const W4a16Params& p = plan.p;
  // Float zero points decode as s4 (u - 8).
  const WeightType weight_type =
      l.float_zero ? WeightType::kS4 : desc.weight_type;
  const bool small_runs = plan.regime.Uses(W4a16Path::kInt4Small);
  const bool tall_runs = plan.regime.Uses(W4a16Path::kInt4Tall);
  if (small_runs || tall_runs) {
    // The int4 kernel(s) the regime runs.
    W4a16GemvConfig gemv;
    gemv.isa = plan.key_isa;
    gemv.flavor = plan.flavor;
    gemv.out_dtype = desc.out_dtype;
    gemv.weight_type = weight_type;
    gemv.float_zero = l.float_zero;
    gemv.folded_zero = l.folded_zero;
    gemv.meta_dtype = l.meta_dtype;
    gemv.group_size = plan.group;
    gemv.per_channel = desc.group_size == -1;
    gemv.n = desc.n;
    gemv.k = desc.k;
    gemv.nr = static_cast<int>(l.block_n());
    gemv.bias = desc.has_bias;
    gemv.epilogue = desc.epilogue;
    if (desc.epilogue.silu_mul) {
      gemv.n = l.n;  // the interleaved columns
      gemv.out_n = desc.out_n();
    }
    gemv.prefetch = p.prefetch_distance;
    const std::vector<W4a16GemvConfig> int4 =
        W4a16Int4Configs(p, plan.flavor, gemv);
    for (const W4a16GemvConfig& c : int4) {
      if (absl::Status s = CheckW4a16GemvConfig(c); !s.ok()) {
        *why_not = std::string(s.message());
        return absl::OkStatus();
      }
    }
    if (small_runs) {
      auto small =
          Entry<W4a16GemvGenerator::Fn>(GetW4a16GemvKernel(int4[0]), kernels);
      if (!small.ok()) return small.status();
      kernels->int4_small = kernels->int4_tall = *small;
    }
    if (tall_runs && (int4.size() > 1 || !small_runs)) {
      auto tall = Entry<W4a16GemvGenerator::Fn>(GetW4a16GemvKernel(int4.back()),
                                                kernels);
      if (!tall.ok()) return tall.status();
      kernels->int4_tall = *tall;
    }
  }
  if (plan.regime.Uses(W4a16Path::kTiles)) {
    // Heights a call from amx_min_m rows on can need: its row tiles are
    // ceil(m / 32) of equal height to within one row, so at least 16 rows
    // from m = 17 on.
    const int least = static_cast<int>(std::min<int64_t>(
        std::min<int64_t>(p.amx_min_m, 16), kW4a16AmxMaxRows));
    const bool has_tail = W4a16AmxHasTail(desc, l);
    const W4a16AmxDecodeConfig dc = W4a16AmxDecodeConfigOf(plan, l);
    for (const absl::Status& s :
         {CheckW4a16AmxDecodeConfig(dc),
          CheckW4a16AmxConfig(
              W4a16AmxConfigOf(desc, plan, l, kW4a16AmxMaxRows, false))}) {
      if (!s.ok()) {
        *why_not = std::string(s.message());
        return absl::OkStatus();
      }
    }
    auto d = Entry<W4a16AmxDecodeFn>(GetW4a16AmxDecodeKernel(dc), kernels);
    if (!d.ok()) return d.status();
    kernels->amx_decode = *d;
    for (int blocks = 1; blocks <= p.amx_row_blocks; ++blocks) {
      std::vector<W4a16AmxGenerator::Fn>& full = kernels->amx_tiles[blocks - 1];
      std::vector<W4a16AmxGenerator::Fn>& last = kernels->amx_tail[blocks - 1];
      full.assign(kW4a16AmxMaxRows + 1, nullptr);
      last.assign(kW4a16AmxMaxRows + 1, nullptr);
      // Two blocks serve pairs of row tiles, which exist from m = 33 on.
      const int lowest = blocks == 1 ? least : kW4a16AmxMaxRows / 2 + 1;
      for (int rows = kW4a16AmxMaxRows; rows >= lowest; --rows) {
        for (const bool tail : {false, true}) {
          if (tail && !has_tail) continue;
          auto gen = GetW4a16AmxKernel(
              W4a16AmxConfigOf(desc, plan, l, rows, tail, blocks));
          if (!gen.ok()) return gen.status();
          // One name per row-block count (every height is the same code).
          if (rows == kW4a16AmxMaxRows)
            kernels->names.push_back((*gen)->name());
          kernels->held.push_back(*gen);
          (tail ? last : full)[rows] = (*gen)->entry<W4a16AmxGenerator::Fn>();
        }
      }
    }
    if (!has_tail) kernels->amx_tail = kernels->amx_tiles;
  }
  if (!plan.regime.Uses(W4a16Path::kPanels)) return absl::OkStatus();

  // The dequantize + panel path.
  W4a16DequantConfig dq;
  dq.isa = plan.key_isa;
  dq.weight_type = weight_type;
  dq.float_zero = l.float_zero;
  dq.meta_dtype = l.meta_dtype;
  dq.group_size = plan.group;
  dq.per_channel = desc.group_size == -1;
  dq.nr = static_cast<int>(l.block_n());
  dq.segment = plan.segment;
  dq.round_weights_bf16 = desc.numerics == Numerics::kZentorch;
  W4a16PanelConfig panel;
  panel.isa = plan.key_isa;
  panel.out_dtype = desc.out_dtype;
  panel.bias = desc.has_bias;
  panel.mr = p.gemm_mr;
  panel.nr = p.gemm_nr_vectors * plan.lanes;
  panel.stride = l.block_n();
  panel.n = panel.nr;
  panel.epilogue = desc.epilogue;
  panel.float_zero = l.float_zero;
  W4a16PanelConfig tail = panel;
  if (desc.epilogue.silu_mul) {
    // Packed columns all exist (padding is zero); output columns: nr / 2
    // per tile, fewer in the last.
    panel.out_n = panel.nr / 2;
    tail.out_n = desc.out_n() % panel.out_n;
    tail.n = tail.out_n != 0 ? panel.n : 0;
  } else {
    tail.n = desc.n % panel.nr;
  }
  for (const absl::Status& s :
       {CheckW4a16DequantConfig(dq), CheckW4a16PanelConfig(panel)}) {
    if (!s.ok()) {
      *why_not = std::string(s.message());
      return absl::OkStatus();
    }
  }
  auto d = Entry<W4a16DequantGenerator::Fn>(GetW4a16DequantKernel(dq), kernels);
  if (!d.ok()) return d.status();
  kernels->dequant = *d;
  auto full =
      Entry<W4a16PanelGenerator::Fn>(GetW4a16PanelKernel(panel), kernels);
  if (!full.ok()) return full.status();
  kernels->panel_full = kernels->panel_tail = *full;
  if (tail.n != 0) {
    auto t = Entry<W4a16PanelGenerator::Fn>(GetW4a16PanelKernel(tail), kernels);
    if (!t.ok()) return t.status();
    kernels->panel_tail = *t;
  }
  return absl::OkStatus();
}

}  // namespace w4jit::internal
