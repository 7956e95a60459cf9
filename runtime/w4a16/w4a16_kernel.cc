// The W4A16 JIT LinearKernel: owns the packed weights and the kernels of
// one layer, and runs them over threads.
//
// Small M (and every M of the bf16-dot flavour): the int4 kernel
// (W4a16GemvGenerator) over column blocks split between threads, each
// weight streamed once per call per row tile: a short tile as wide as the
// block for the fewest rows, a tall narrow one (the decoded weights reused
// by more rows) from tall_min_m rows on.
// Large M, f32-FMA flavour: per (row block, column block) task of a 2-D
// grid (runtime/threads/work_split.h), each K block of the column block is
// dequantized once into an f32 panel (W4a16DequantGenerator) and
// multiplied with all rows of the row block (W4a16PanelGenerator).
// Large M, bf16 x on the amx tier: the AMX tiles (RunTiles; docs/amx.md).
// Numerics::kZentorch (each dequantized weight rounded to bf16): the panel
// path at every M, its dequantizer rounding (W4a16DequantConfig::
// round_weights_bf16); the int4 kernels apply the scale per group and so
// never hold a dequantized weight to round.
// Which path runs from which M is the plan's W4a16Regime, stated once.
// Every way every output is computed by the same instructions whatever
// the thread count, so results are bit-identical across thread counts.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/log.h"
#include "base/numeric.h"
#include "dispatch/isa_traits.h"
#include "jit/w4a16_amx_plan.h"
#include "jit/w4a16_dequant_generator.h"
#include "jit/w4a16_gemv_generator.h"
#include "jit/w4a16_gemv_plan.h"
#include "jit/w4a16_panel_generator.h"
#include "runtime/gate_up_interleave.h"
#include "runtime/jit_kernels.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/work_split.h"
#include "runtime/w4a16/w4a16_kernel_lookup.h"
#include "runtime/w4a16/w4a16_pack.h"
#include "runtime/w4a16/w4a16_params.h"
#include "runtime/w4a16/w4a16_tile_grid.h"
#include "runtime/w4a16/w4a16_tile_x.h"
#include "runtime/x_reuse.h"

namespace w4jit::internal {
namespace {

// The calling thread's packed rows of x, reused across calls (each thread
// packs for the calls it makes, and the workers only read it while that
// call runs): no allocation or zero fill per call. One buffer per element
// type; under an allocator hook it is exact-sized (base/memory.h).
template <class T, int kTag = 0>
T* PackedXScratch(size_t n) {
  thread_local AlignedVector<T> buffer;
  thread_local uint64_t generation = 0;
  return ScratchFor(&buffer, &generation, n);
}
// The tiles' x sums: a buffer of their own, so that the packing below
// stays valid while other paths pack.
constexpr int kTileSums = 1;

// What the tile path last packed on this thread (runtime/x_reuse.h):
// fused MoE's column panels of one expert pack its rows once.
struct TilePack {
  XCall call;
  int64_t k = 0;
  DType dtype = DType::kF32;
  const int32_t* perm = nullptr;
  int64_t sums_group = 0;
  bool operator==(const TilePack& o) const {
    return call == o.call && k == o.k && dtype == o.dtype && perm == o.perm &&
           sums_group == o.sums_group;
  }
};
TilePack* LastTilePack() {
  thread_local TilePack last;
  return &last;
}

// The largest multiple of `step` that divides `g` and is <= limit (at
// least step).
int64_t MultipleDividingAtMost(int64_t g, int64_t step, int64_t limit) {
  for (int64_t d = std::min(g, limit) / step * step; d > step; d -= step) {
    if (g % d == 0) return d;
  }
  return step;
}

// Sets plan->amx (and its K blocking) where the AMX tiles can run the
// layer, or returns why not. plan->flavor and panels_only are set.
std::string AmxPlan(const LayerDesc& desc, int64_t group, const W4a16Params& p,
                    W4a16Plan* plan) {
  if (plan->flavor != Flavor::kF32Fma) {
    return "the tiles decode the f32-FMA layout, not the bf16-dot one";
  }
  if (desc.act_dtype != DType::kBF16 &&
      !(desc.act_dtype == DType::kF32 && desc.allow_bf16_compute)) {
    return "x is f32 without allow_bf16_compute (the tiles multiply bf16)";
  }
  if (p.vector_bits != 512 || (p.block_vectors * 16) % 32 != 0 ||
      p.block_vectors * 16 > (plan->panels_only ? 128 : 256)) {
    return absl::StrFormat(
        "blocks of %d x %d-bit vectors (the tiles need "
        "an even number of zmm, up to %d)",
        p.block_vectors, p.vector_bits, plan->panels_only ? 8 : 16);
  }
  // The largest multiple of `unit` that divides K, up to amx_kc.
  auto segment = [&](int64_t unit) {
    return MultipleDividingAtMost(desc.k, unit, p.amx_kc);
  };
  if (plan->panels_only) {
    // Numerics::kZentorch: the decoder rounds each dequantized weight to
    // bf16, so the tiles sum whole segments of K (multiples of the group
    // and of 32) with no scale in between.
    const int64_t unit = std::lcm(group, int64_t{kW4a16AmxKStep});
    if (desc.k % unit != 0) {
      return absl::StrFormat(
          "K = %d is not a multiple of %d (the group and "
          "the tiles' step)",
          desc.k, unit);
    }
    plan->amx_scaled = true;
    // The K block is the kernels' segment, whatever the rows.
    plan->amx_group = plan->amx_kc = plan->amx_kc_small = segment(unit);
  } else if (group % kW4a16AmxKStep != 0) {
    return absl::StrFormat("%s %d is not a multiple of %d",
                           desc.group_size == -1 ? "K" : "group size", group,
                           kW4a16AmxKStep);
  } else if (desc.group_size == -1) {
    // Per channel: segments of K take the one scale in turn (the K block
    // is the kernels' segment, whatever the rows).
    plan->amx_group = plan->amx_kc = plan->amx_kc_small =
        segment(kW4a16AmxKStep);
  } else {
    plan->amx_group = group;
    plan->amx_kc = group * std::max<int64_t>(1, p.amx_kc / group);
    plan->amx_kc_small = std::min(
        plan->amx_kc, group * std::max<int64_t>(1, p.amx_kc_small / group));
  }
  plan->amx = true;
  return "";
}

class W4a16Kernel final : public LinearKernel {
 public:
  W4a16Kernel(const LayerDesc& desc, const W4a16Plan& plan, W4a16Packed packed,
              std::vector<int32_t> k_perm)
      : desc_(desc),
        plan_(plan),
        packed_(std::move(packed)),
        k_perm_(std::move(k_perm)) {}

  // Builds (or finds in the cache) every kernel the layer may run.
  absl::Status BuildKernels(std::string* why_not) {
    return GetW4a16Kernels(desc_, plan_, packed_.layout, &kernels_, why_not);
  }

  void Run(const RunArgs& args) const override {
    switch (plan_.regime.PathAt(args.m)) {
      case W4a16Path::kTiles:
        RunTiles(args);
        break;
      case W4a16Path::kPanels:
        RunPanels(args);
        break;
      case W4a16Path::kInt4Tall:
        RunInt4(args, kernels_.int4_tall, plan_.p.tall_mr);
        break;
      case W4a16Path::kInt4Small:
        RunInt4(args, kernels_.int4_small, plan_.p.gemv_mr);
        break;
    }
  }
  size_t packed_bytes() const override {
    return packed_.bytes() + k_perm_.size() * sizeof(int32_t);
  }
  std::vector<std::string> kernel_names() const override {
    return kernels_.names;
  }
  // The panels are the f32-FMA flavour's; the int4 kernel computes in its
  // flavour, at the key's vector width.
  LayerCompute compute_at(int64_t m) const override {
    if (plan_.regime.PathAt(m) == W4a16Path::kTiles) {
      return {ComputeOp::kAmxBf16, 0};
    }
    return {plan_.flavor == Flavor::kBf16Dot ? ComputeOp::kBf16Dot
                                             : ComputeOp::kF32Fma,
            TraitsOf(plan_.key_isa).vector_bytes * 8};
  }

 private:
  // Act-order: x is packed through this permutation (or nullptr).
  const int32_t* KPerm() const {
    return k_perm_.empty() ? nullptr : k_perm_.data();
  }
  // Float zero points: sums of x per group ride in the bf16-dot int4
  // kernel's packed rows (w4a16_pack.h); 0 without.
  int64_t SumGroup() const {
    return packed_.layout.float_zero ? plan_.group : 0;
  }
  // `mr`: the kernel's tallest row tile, the packed row groups of x.
  void RunInt4(const RunArgs& args, W4a16GemvGenerator::Fn fn, int mr) const;
  void RunPanels(const RunArgs& args) const;
  // The AMX tiles: row tiles of up to 32 rows grouped into row blocks, a
  // task per (row block, column block) decoding its block's panel once per
  // K block for all its row tiles.
  void RunTiles(const RunArgs& args) const;
  void RunPanelTask(const RunArgs& args, const float* xs, int64_t m0,
                    int64_t rows, int64_t block, float* panel,
                    float* acc) const;
  // Output columns of `packed` packed columns (half with silu_mul).
  int64_t OutCols(int64_t packed) const {
    return desc_.epilogue.silu_mul ? packed / 2 : packed;
  }
  // The kernels' operand pointers at output (row, col).
  void SetOperands(const RunArgs& args, int64_t row, int64_t col,
                   const void** ep, int64_t* ep_ld_bytes) const {
    for (int i = 0; i < 2; ++i) {
      if (i >= desc_.epilogue.num_binary) {
        ep[i] = nullptr;
        ep_ld_bytes[i] = 0;
        continue;
      }
      const int64_t size = DTypeSize(desc_.epilogue.binary[i].dtype);
      ep_ld_bytes[i] = args.ep_ld[i] * size;
      ep[i] = static_cast<const char*>(args.ep_data[i]) + row * ep_ld_bytes[i] +
              col * size;
    }
  }

  LayerDesc desc_;
  W4a16Plan plan_;
  W4a16Packed packed_;
  std::vector<int32_t> k_perm_;  // CanonicalWeights::k_perm
  W4a16Kernels kernels_;
};

void W4a16Kernel::RunInt4(const RunArgs& args, W4a16GemvGenerator::Fn fn,
                          int mr) const {
  const W4a16Layout& l = packed_.layout;
  const int64_t m = args.m;
  const int64_t k = desc_.k;
  // A single bf16 row already is in the packed-row format of the dot
  // flavour (unless act-order permutes it).
  const void* xs = args.x;
  const int64_t sums = SumGroup();
  if (plan_.flavor == Flavor::kBf16Dot) {
    if (m > 1 || desc_.act_dtype != DType::kBF16 || KPerm() != nullptr ||
        sums != 0) {
      uint32_t* xb = PackedXScratch<uint32_t>(
          static_cast<size_t>(m * PackedBf16PairsRowElements(k, sums)));
      PackRowsBf16Pairs(args.x, desc_.act_dtype, args.ldx, m, k, mr, xb,
                        KPerm(), sums);
      xs = xb;
    }
  } else {
    // Always packed: the pairs recombined for the kernel's byte decode,
    // and the group sums its accumulators start from (w4a16_layout.h).
    const F32Int4RowSlots slots = F32Int4Slots(l.asymmetric, l.float_zero);
    float* xf = PackedXScratch<float>(static_cast<size_t>(
        m * PackedF32Int4RowElements(k, plan_.group, slots)));
    PackRowsF32Int4(args.x, desc_.act_dtype, args.ldx, m, k, mr, xf, KPerm(),
                    plan_.group, slots);
    xs = xf;
  }
  const int64_t out_size = static_cast<int64_t>(DTypeSize(desc_.out_dtype));
  const int64_t blocks = l.blocks();
  const int64_t out_block = OutCols(l.block_n());
  const int chunks = SmallMParts(blocks, Concurrency());
  ParallelRun(chunks, [&](int c) {
    const Range r = SplitRange(blocks, chunks, c);
    W4a16GemvArgs g;
    g.w = packed_.weights.data() + r.begin * l.block_weight_bytes();
    g.meta = packed_.meta.data() + r.begin * l.block_meta_bytes();
    g.bias = packed_.bias.empty() ? nullptr : packed_.bias.data();
    g.x = xs;
    g.y = static_cast<char*>(args.y) + r.begin * out_block * out_size;
    g.ldy_bytes = args.ldy * out_size;
    SetOperands(args, 0, r.begin * out_block, g.ep, g.ep_ld_bytes);
    g.m = m;
    g.block_begin = r.begin;
    g.block_end = r.end;
    fn(&g);
  });
}

void W4a16Kernel::RunPanels(const RunArgs& args) const {
  const W4a16Layout& l = packed_.layout;
  const int64_t m = args.m;
  const int64_t k = desc_.k;
  const int mr = plan_.p.gemm_mr;
  float* xs = PackedXScratch<float>(static_cast<size_t>(m * k));
  PackRowsF32(args.x, desc_.act_dtype, args.ldx, m, k, mr, xs, KPerm());
  // Row blocks are whole row tiles, so they start on packed row groups
  // (runtime/threads/work_split.h).
  const W4a16PanelGrid grid =
      MakeW4a16PanelGrid(m, l.blocks(), mr, plan_.p.mc, Concurrency());
  ParallelRun(grid.chunks, [&](int c) {
    // Per-thread scratch, reused across calls (a thread runs one chunk at
    // a time).
    static thread_local AlignedVector<float> panel, acc;
    static thread_local uint64_t generation[2] = {};
    float* panel_data = ScratchFor(&panel, &generation[0],
                                   static_cast<size_t>(plan_.kc * l.block_n()));
    float* acc_data =
        ScratchFor(&acc, &generation[1],
                   static_cast<size_t>(grid.row_block * l.block_n()));
    const Range r = W4a16PanelChunk(grid, c);
    for (int64_t t = r.begin; t < r.end; ++t) {
      const W4a16PanelTask task = W4a16PanelTaskAt(grid, t);
      RunPanelTask(args, xs, task.m0, task.rows, task.col_block, panel_data,
                   acc_data);
    }
  });
}

void W4a16Kernel::RunPanelTask(const RunArgs& args, const float* xs, int64_t m0,
                               int64_t rows, int64_t block, float* panel,
                               float* acc) const {
  const W4a16Layout& l = packed_.layout;
  const int64_t k = desc_.k;
  const int64_t nb = l.block_n();
  const int64_t nr = int64_t{plan_.p.gemm_nr_vectors} * plan_.lanes;
  const int64_t out_size = static_cast<int64_t>(DTypeSize(desc_.out_dtype));
  for (int64_t k0 = 0; k0 < k; k0 += plan_.kc) {
    const int64_t kc = std::min(plan_.kc, k - k0);
    W4a16DequantArgs d;
    d.w = packed_.weights.data() + block * l.block_weight_bytes() + k0 / 2 * nb;
    d.meta = packed_.meta.data() + block * l.block_meta_bytes() +
             k0 / plan_.group * l.group_meta_bytes();
    d.panel = panel;
    d.segments = kc / plan_.segment;
    kernels_.dequant(&d);
    const bool last = k0 + kc == k;
    for (int64_t h = 0; h < nb / nr; ++h) {
      const int64_t col0 = block * nb + h * nr;
      if (OutCols(col0) >= desc_.out_n()) break;
      W4a16PanelArgs a;
      a.a = xs + m0 * k;
      a.a_row_bytes = k * 4;
      a.k0 = k0;
      a.kc = kc;
      a.panel = panel + h * nr;
      a.m = rows;
      a.acc = acc + h * nr;
      const int64_t out0 = OutCols(col0);
      a.y = static_cast<char*>(args.y) + (m0 * args.ldy + out0) * out_size;
      a.ldy_bytes = args.ldy * out_size;
      a.bias = packed_.bias.empty() ? nullptr : packed_.bias.data() + col0;
      a.flags = (k0 > 0 ? W4a16PanelArgs::kLoadAcc : int64_t{0}) |
                (last ? W4a16PanelArgs::kFinal : int64_t{0});
      SetOperands(args, m0, out0, a.ep, a.ep_ld_bytes);
      (desc_.out_n() - out0 >= OutCols(nr) ? kernels_.panel_full
                                           : kernels_.panel_tail)(&a);
    }
  }
}

void W4a16Kernel::RunTiles(const RunArgs& args) const {
  const W4a16Layout& l = packed_.layout;
  const int64_t k = desc_.k;
  const int64_t group = plan_.amx_group;
  // x in the tiles' layout, with float zero points (unless the panel holds
  // them) each group's sums of it; row tiles of equal height to within one
  // row, grouped into row blocks of about mc rows: the grid's "rows" are
  // tiles.
  const bool sums = l.float_zero && !plan_.amx_scaled;
  const W4a16RowTiles tiles(args.m);
  // One row tile's packed x and x sums (also the step from a tile call's
  // first row block to its second).
  const int64_t x_tile = W4a16TileXElements(k);
  const int64_t sums_tile = W4a16TileSums(k, group);
  uint16_t* xs =
      PackedXScratch<uint16_t>(static_cast<size_t>(tiles.count * x_tile));
  float* x_sums = sums ? PackedXScratch<float, kTileSums>(
                             static_cast<size_t>(tiles.count * sums_tile))
                       : nullptr;
  const TilePack pack{XCall::Of(args), k, desc_.act_dtype, KPerm(),
                      sums ? group : 0};
  DeriveFromX(args, pack, LastTilePack(), [&] {
    PackW4a16TileX(args.x, desc_.act_dtype, args.ldx, tiles, k, KPerm(),
                   sums ? group : 0, xs, x_sums);
  });
  const int64_t nb = l.block_n();
  const W4a16TileGrid grid =
      MakeW4a16TileGrid(tiles.count, l.blocks(), nb, plan_.p.amx_mc,
                        plan_.p.amx_nc, Concurrency());
  const int64_t out_size = static_cast<int64_t>(DTypeSize(desc_.out_dtype));
  // Per channel every segment of K reads group 0's meta.
  const int64_t meta_group = l.groups() == 1 ? 0 : l.group_meta_bytes();
  const int64_t decode_group = W4a16AmxDecodeGroup(plan_, l);
  // One row tile's f32 scratch for one column block.
  const int64_t acc_floats = kW4a16AmxMaxRows * nb;
  ParallelRun(grid.chunks, [&](int c) {
    // Per-thread scratch, reused across calls.
    static thread_local AlignedVector<uint32_t> panel;
    static thread_local AlignedVector<float> acc;
    static thread_local uint64_t generation[2] = {};
    uint32_t* panel_data =
        ScratchFor(&panel, &generation[0],
                   static_cast<size_t>(
                       std::max(plan_.amx_kc, plan_.amx_kc_small) / 2 * nb));
    float* acc_data =
        ScratchFor(&acc, &generation[1],
                   static_cast<size_t>(grid.tiles_per_block *
                                       grid.blocks_per_group * acc_floats));
    const Range r = SplitRange(grid.units(), grid.chunks, c);
    // The height whose configuration this thread's tiles hold (0: none):
    // the calls keep the tiles configured between them, and the chunk's
    // last call releases them.
    int configured_rows = 0;
    for (int64_t u = r.begin; u < r.end; ++u) {
      const W4a16TileGrid::Unit unit = grid.UnitAt(u);
      // One or two row tiles read each panel once or twice: a K block
      // whose panel stays in L1 between the decoder and the tiles.
      const bool small = unit.t1 - unit.t0 <= 2;
      const int64_t block_k = small ? plan_.amx_kc_small : plan_.amx_kc;
      // One column block's panel at k0 (its decode, then every row tile).
      auto block = [&](int64_t b, int64_t k0) {
        const int64_t kc = std::min(block_k, k - k0);
        const int64_t g0 = k0 / group;
        const auto& fns =
            b + 1 == l.blocks() ? kernels_.amx_tail : kernels_.amx_tiles;
        const int64_t out0 = OutCols(b * nb);
        W4a16AmxDecodeArgs d;
        d.w = packed_.weights.data() + b * l.block_weight_bytes() + k0 / 2 * nb;
        d.meta = packed_.meta.data() + b * l.block_meta_bytes() +
                 k0 / decode_group * meta_group;
        d.panel = panel_data;
        d.groups = kc / decode_group;
        kernels_.amx_decode(&d);
        for (int64_t rt = unit.t0; rt < unit.t1;) {
          const int64_t row0 = tiles.Row0(rt);
          const int rows = static_cast<int>(tiles.Rows(rt));
          // Two row tiles of one height run as one call, which reads each
          // B tile of the panel from L1 the second time.
          const int blocks = rt + 1 < unit.t1 && tiles.Rows(rt + 1) == rows &&
                                     !fns[1].empty() &&
                                     fns[1][static_cast<size_t>(rows)]
                                 ? 2
                                 : 1;
          W4a16AmxArgs a;
          a.x = xs + rt * x_tile + k0 * kW4a16AmxMaxRows;
          a.x_sums =
              sums ? x_sums + rt * sums_tile + g0 * kW4a16AmxMaxRows : nullptr;
          a.x_block_bytes = x_tile * static_cast<int64_t>(sizeof(uint16_t));
          a.x_sums_block_bytes =
              sums_tile * static_cast<int64_t>(sizeof(float));
          a.panel = panel_data;
          a.meta = d.meta;
          a.groups = kc / group;
          // A column block's row tiles are adjacent, so that a call's
          // second row block's acc follows its first's.
          a.acc = acc_data +
                  ((b - unit.b0) * grid.tiles_per_block + (rt - unit.t0)) *
                      acc_floats;
          a.y =
              static_cast<char*>(args.y) + (row0 * args.ldy + out0) * out_size;
          a.ldy_bytes = args.ldy * out_size;
          a.bias =
              packed_.bias.empty() ? nullptr : packed_.bias.data() + b * nb;
          rt += blocks;
          // The unit's last call in either order below.
          const bool chunk_end = u + 1 == r.end && k0 + kc == k &&
                                 b + 1 == unit.b1 && rt == unit.t1;
          a.flags = (k0 > 0 ? W4a16AmxArgs::kLoadAcc : int64_t{0}) |
                    (k0 + kc == k ? W4a16AmxArgs::kFinal : int64_t{0}) |
                    (rows == configured_rows ? W4a16AmxArgs::kTilesConfigured
                                             : int64_t{0}) |
                    (chunk_end ? int64_t{0} : W4a16AmxArgs::kKeepTiles);
          configured_rows = chunk_end ? 0 : rows;
          SetOperands(args, row0, out0, a.ep, a.ep_ld_bytes);
          fns[static_cast<size_t>(blocks - 1)][static_cast<size_t>(rows)](&a);
        }
      };
      if (small) {
        // Each column block's K in turn: its weights one stream, as the
        // vector kernels read them, which the decoder's prefetch runs
        // ahead in (K block by K block, a block's 4 KiB runs are a page
        // each, one per column block in turn): 1.02-1.08x at M = 4 from
        // DRAM, level at 16 and 32. x, a tile or two of rows, stays in L2
        // either way.
        for (int64_t b = unit.b0; b < unit.b1; ++b) {
          for (int64_t k0 = 0; k0 < k; k0 += block_k) {
            block(b, k0);
          }
        }
      } else {
        for (int64_t k0 = 0; k0 < k; k0 += block_k) {
          for (int64_t b = unit.b0; b < unit.b1; ++b) {
            block(b, k0);
          }
        }
      }
    }
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinearKernel>> MakeW4a16JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier tier, const W4a16Params& given, std::string* why_not) {
  std::unique_ptr<LinearKernel> none;
  why_not->clear();
  // The vector kernels are the SIMD tier's; the AMX tier adds the tiles.
  const IsaTier isa = TraitsOf(tier).simd_tier;
  // silu_mul's even tile widths come with the resolved parameters
  // (WithSiluMulTiles in w4a16_params.cc).
  const W4a16Params& params = given;
  if (absl::Status s = CheckW4a16Params(params, tier); !s.ok()) {
    *why_not = std::string(s.message());
    return none;
  }
  W4a16Plan plan;
  plan.p = params;
  plan.group = w.group_size;
  if (plan.group % 2 != 0) {
    *why_not = desc.group_size == -1
                   ? absl::StrFormat(
                         "K = %d is odd (W4A16 kernels read k in "
                         "pairs)",
                         desc.k)
                   : absl::StrFormat(
                         "group size %d is odd (W4A16 kernels "
                         "read k in pairs)",
                         desc.group_size);
    return none;
  }
  if (TraitsOf(isa).vector_bytes == 0) {
    *why_not = "W4A16 JIT kernels need AVX2 + FMA";
    return none;
  }
  // The f32-FMA code needs only the vector width: the least tier with it.
  plan.key_isa = TierOfVectorBytes(params.vector_bits / 8);
  if (!HasFeaturesOf(isa, plan.key_isa)) {
    *why_not = absl::StrFormat("%d-bit W4A16 kernels need %s",
                               params.vector_bits, ToString(plan.key_isa));
    return none;
  }
  plan.lanes = TraitsOf(plan.key_isa).lanes32();
  plan.flavor = Flavor::kF32Fma;
  // Zentorch numerics dequantize (and round) every weight: the f32-FMA
  // flavour's panel path, at every M.
  plan.panels_only = desc.numerics == Numerics::kZentorch;
  if (params.flavor == Flavor::kBf16Dot && !plan.panels_only) {
    // bf16 compute only where the numerics allow it (numerics.md): x is
    // bf16 already, or the caller allowed rounding f32 x to bf16.
    const bool allowed =
        desc.act_dtype == DType::kBF16 || desc.allow_bf16_compute;
    // The dot layout packs k octets (w4a16_layout.h).
    if (allowed && plan.group % 8 == 0) {
      if (!TierHas(plan.key_isa, IsaFeature::kAvx512) ||
          !TierHas(isa, IsaFeature::kAvx512Bf16)) {
        *why_not = "the bf16-dot W4A16 flavour needs 512-bit AVX512_BF16";
        return none;
      }
      plan.flavor = Flavor::kBf16Dot;
      // Its kernels are named for the feature they need.
      plan.key_isa = LeastTierWith(IsaFeature::kAvx512Bf16);
    }
  }
  if (params.amx()) {
    std::string no_tiles = AmxPlan(desc, plan.group, params, &plan);
    if (!no_tiles.empty()) {
      Log(LogLevel::kInfo,
          absl::StrCat("W4A16 layer n=", desc.n, " k=", desc.k,
                       " keeps the vector kernels at every M: ", no_tiles));
    }
  }
  plan.regime = MakeW4a16Regime({plan.flavor == Flavor::kBf16Dot,
                                 plan.panels_only, plan.amx, params.tall_min_m,
                                 params.gemm_min_m, params.amx_min_m});
  if (plan.group <= params.kc) {
    plan.segment = plan.group;
    plan.kc = plan.group * std::max<int64_t>(1, params.kc / plan.group);
  } else {
    plan.segment = MultipleDividingAtMost(plan.group, 2, params.kc);
    plan.kc = plan.segment;
  }

  // silu_mul: gate and up columns interleaved per vector, so that every
  // block (and every panel tile) holds both halves of its outputs.
  std::optional<CanonicalWeights> interleaved;
  if (desc.epilogue.silu_mul) interleaved = InterleaveGateUp(w, plan.lanes);
  const CanonicalWeights& packed_w = interleaved ? *interleaved : w;
  W4a16Layout layout;
  layout.flavor = plan.flavor;
  layout.lanes = plan.lanes;
  layout.nv = params.block_vectors;
  layout.n = packed_w.n;
  layout.k = desc.k;
  layout.group_size = plan.group;
  layout.float_zero = w.float_zero();
  layout.asymmetric = w.asymmetric && !layout.float_zero;
  // The packer folds integer zero points into float ones for the dot
  // flavour (WithDotZeroPointsFolded); the kernels follow packed_.layout.
  if (params.meta_16bit) {
    layout.meta_dtype =
        CompactW4a16MetaDtype(packed_w, layout, cpu.features.f16c);
  }
  // The kernels step through a block with 32-bit displacements.
  if (layout.block_weight_bytes() > INT32_MAX ||
      layout.block_meta_bytes() > INT32_MAX) {
    *why_not = absl::StrFormat(
        "a %d-column block of K = %d with %d groups exceeds 2 GiB",
        layout.block_n(), desc.k, layout.groups());
    return none;
  }
  auto kernel = std::make_unique<W4a16Kernel>(
      desc, plan, PackW4a16Weights(packed_w, layout), w.k_perm);
  if (absl::Status s = kernel->BuildKernels(why_not); !s.ok()) return s;
  if (!why_not->empty()) return none;
  return std::unique_ptr<LinearKernel>(std::move(kernel));
}

absl::StatusOr<std::unique_ptr<LinearKernel>> MakeW4a16JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier isa, std::string* why_not) {
  return MakeW4a16JitKernel(desc, w, cpu, isa,
                            ResolveW4a16Params(cpu, isa, desc), why_not);
}

}  // namespace w4jit::internal
