// The DA8W4 JIT LinearKernel: owns the packed weights and the JIT kernels
// of one layer; Run() quantizes x into per-call scratch, then sweeps the
// output in tiles on the library's threads.
//
// Work split (identical results for any thread count: every output element
// is computed by the same instruction sequence whichever tile holds it):
//   M <= handover_m: column ranges only, each thread taking whole ranges of
//     column blocks for all rows, so the weights stream from memory once.
//   M >  handover_m: the 2-D split of runtime/threads/work_split.h, column
//     panels (sized to stay in L2) x ranges of row tiles. Within a work
//     item all row tiles sweep the panel, so weights are re-read from L2,
//     not memory; from panel_min_m rows (amx_min_m for the AMX tiles) the
//     item first decodes its panel into per-thread scratch and runs the
//     decoded-panel tile on it.
// Which path runs from which M is the layer's Da8w4Regime, stated once:
// Build makes the kernels of its paths, Run picks the row of its M.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/numeric.h"
#include "dispatch/isa_traits.h"
#include "jit/act_quantizer_generator.h"
#include "jit/da8w4_gemm_generator.h"
#include "jit/da8w4_gemm_plan.h"
#include "runtime/da8w4/da8w4_kernel_lookup.h"
#include "runtime/da8w4/da8w4_pack.h"
#include "runtime/da8w4/da8w4_params.h"
#include "runtime/da8w4/da8w4_regime.h"
#include "runtime/gate_up_interleave.h"
#include "runtime/jit_kernels.h"
#include "runtime/threads/parallel.h"
#include "runtime/threads/work_split.h"
#include "runtime/x_reuse.h"

namespace w4jit::internal {
namespace {

// Kernels of the tiles with a given number of rows.
struct TileKernels {
  int nblk = 1;
  Da8w4GemmFn main = nullptr;  // nblk blocks per step
  Da8w4GemmFn one = nullptr;   // one block per step: remainders
  Da8w4GemmFn tail = nullptr;  // the partial last block (if N % NB != 0)
};

// Per-call buffers of the quantized activations (one set per calling
// thread, so concurrent Run() calls from different threads never share
// one). Three separate buffers, so that under a guard-page allocator hook
// (base/memory.h) each one ends at a PROT_NONE page.
struct Scratch {
  int8_t* qa;
  float* sa;
  int32_t* sums;
};

Scratch GetScratch(int64_t m, int64_t qa_stride, int64_t sums_stride,
                   int64_t sa_stride) {
  thread_local AlignedVector<int8_t> qa;
  thread_local AlignedVector<float> sa;
  thread_local AlignedVector<int32_t> sums;
  thread_local uint64_t generation[3] = {};
  return Scratch{
      ScratchFor(&qa, &generation[0], static_cast<size_t>(m * qa_stride)),
      ScratchFor(&sa, &generation[1], static_cast<size_t>(m * sa_stride / 4)),
      ScratchFor(&sums, &generation[2],
                 static_cast<size_t>(m * sums_stride / 4))};
}

// What this thread last quantized into its scratch (runtime/x_reuse.h):
// fused MoE's column panels of one expert quantize its rows once.
struct QuantizedX {
  XCall call;
  ActQuantFn quantizer = nullptr;  // its config: K, groups, dtype, layout
  const int32_t* perm = nullptr;
  int64_t qa_stride = 0, sums_stride = 0, sa_stride = 0;
  bool operator==(const QuantizedX& o) const {
    return call == o.call && quantizer == o.quantizer && perm == o.perm &&
           qa_stride == o.qa_stride && sums_stride == o.sums_stride &&
           sa_stride == o.sa_stride;
  }
};
QuantizedX* LastQuantizedX() {
  thread_local QuantizedX last;
  return &last;
}

// The decoded panel of the calling thread's work item, grown as needed.
uint8_t* PanelScratch(int64_t bytes) {
  thread_local AlignedVector<uint8_t> buffer;
  thread_local uint64_t generation = 0;
  return ScratchFor(&buffer, &generation, static_cast<size_t>(bytes));
}

// The kernel config of the tiles with `rows` rows. Unpacking tiles: the
// GEMM tile's blocks for full tiles, as many as the registers allow (up to
// small_m_nblk) for shorter ones. Decoded-panel tiles: panel_nblk blocks
// at every height. Never more blocks than N has.
Da8w4GemmConfig TileConfig(const LayerDesc& desc, const Da8w4Params& params,
                           IsaTier isa, const Da8w4Layout& layout, int rows,
                           bool decoded) {
  Da8w4GemmConfig c;
  c.isa = isa;
  c.act_dtype = desc.act_dtype;
  c.out_dtype = desc.out_dtype;
  c.weight_type = desc.weight_type;
  c.layout = layout;
  c.bias = desc.has_bias;
  c.mr = rows;
  c.chunk_quads = params.chunk_quads;
  c.decoded = decoded;
  c.prefetch = decoded ? 0 : params.prefetch_distance;
  c.epilogue = desc.epilogue;
  c.out_n = desc.out_n();
  c.act_per_group = desc.act_per_group();
  const int nblk =
      decoded ? params.panel_nblk
      : rows == params.mr
          ? params.nblk
          : std::min(params.small_m_nblk, Da8w4MaxTileBlocks(isa) / rows);
  c.nblk = static_cast<int>(std::clamp<int64_t>(nblk, 1, layout.blocks()));
  return c;
}

// The AMX tile kernel's config for `rows` rows: one decoded block a step.
Da8w4GemmConfig AmxTileConfig(const LayerDesc& desc, const Da8w4Params& params,
                              IsaTier isa, const Da8w4Layout& layout,
                              int rows) {
  Da8w4GemmConfig c = TileConfig(desc, params, isa, layout, rows, true);
  c.amx = true;
  c.nblk = 1;
  return c;
}

// Whether the regime runs the vector tiles that unpack nibbles in the loop
// (decoded false) or those on decoded panels (true).
bool UsesTiles(const Da8w4Regime& regime, bool decoded) {
  if (decoded) return regime.Uses(Da8w4Path::kPanels);
  return regime.Uses(Da8w4Path::kOnePass) || regime.Uses(Da8w4Path::kInLoop);
}

class Da8w4JitKernel final : public LinearKernel {
 public:
  Da8w4JitKernel(const LayerDesc& desc, const Da8w4Params& params,
                 const Da8w4Regime& regime, IsaTier isa, Da8w4Packed packed,
                 const std::vector<int32_t>& k_perm)
      : desc_(desc),
        params_(params),
        regime_(regime),
        isa_(isa),
        packed_(std::move(packed)) {
    if (!k_perm.empty()) {
      // Act-order: the quantizer gathers x through this table (padded for
      // its last vector loads, act_quantizer_generator.h).
      perm_table_.assign(k_perm.size() + kActOrderTablePad, 0);
      std::copy(k_perm.begin(), k_perm.end(), perm_table_.begin());
    }
  }

  // JITs the quantizer and, for each path the regime runs, its kernels of
  // every tile height (1..mr of the path's tile).
  absl::Status Build() {
    const Da8w4Layout& lay = packed_.layout;
    ActQuantConfig qc{
        isa_,           desc_.act_dtype,      lay.k,
        lay.group_size, !perm_table_.empty(), desc_.act_per_group()};
    if (!perm_table_.empty() && !qc.per_group) {
      // A padded act-order K-shard reads fewer columns of x than K: its
      // row maximum must stay inside them (ActQuantConfig::x_k).
      const int32_t last =
          *std::max_element(perm_table_.begin(), perm_table_.begin() + lay.k);
      if (last + 1 < lay.k) qc.x_k = last + 1;
    }
    absl::StatusOr<std::shared_ptr<const Generator>> q = GetActQuantizer(qc);
    if (!q.ok()) return q.status();
    held_.push_back(*q);
    quantize_ = (*q)->entry<ActQuantFn>();
    names_.push_back((*q)->name());
    // The AMX tiles read s4 panels as signed q = u - 8
    // (jit/da8w4_amx_generator.h); the vector panels read u.
    for (const bool amx : {false, true}) {
      if (!regime_.Uses(amx ? Da8w4Path::kTiles : Da8w4Path::kPanels)) {
        continue;
      }
      absl::StatusOr<std::shared_ptr<const Generator>> d = GetDa8w4DecodeKernel(
          isa_, amx && desc_.weight_type == WeightType::kS4);
      if (!d.ok()) return d.status();
      held_.push_back(*d);
      (amx ? decode_amx_ : decode_) = (*d)->entry<Da8w4DecodeFn>();
      if (std::find(names_.begin(), names_.end(), (*d)->name()) ==
          names_.end()) {
        names_.push_back((*d)->name());
      }
    }

    for (const bool decoded : {false, true}) {
      if (!UsesTiles(regime_, decoded)) continue;
      std::vector<TileKernels>& tiles = decoded ? panel_tiles_ : tiles_;
      const int mr = decoded ? params_.panel_mr : params_.mr;
      tiles.resize(static_cast<size_t>(mr) + 1);
      for (int rows = mr; rows >= 1; --rows) {
        TileKernels& tk = tiles[rows];
        Da8w4GemmConfig c =
            TileConfig(desc_, params_, isa_, lay, rows, decoded);
        tk.nblk = c.nblk;
        if (absl::Status s = Get(c, &tk.main); !s.ok()) return s;
        c.nblk = 1;
        if (absl::Status s = Get(c, &tk.one); !s.ok()) return s;
        if (HasTail()) {
          c.n_tail = true;
          if (absl::Status s = Get(c, &tk.tail); !s.ok()) return s;
        }
      }
    }
    if (regime_.Uses(Da8w4Path::kTiles)) {
      amx_tiles_.resize(static_cast<size_t>(params_.amx_mr) + 1);
      for (int rows = params_.amx_mr; rows >= 1; --rows) {
        TileKernels& tk = amx_tiles_[rows];
        Da8w4GemmConfig c = AmxTileConfig(desc_, params_, isa_, lay, rows);
        if (absl::Status s = Get(c, &tk.main); !s.ok()) return s;
        tk.one = tk.main;
        if (HasTail()) {
          c.n_tail = true;
          if (absl::Status s = Get(c, &tk.tail); !s.ok()) return s;
        }
      }
    }
    return absl::OkStatus();
  }

  void Run(const RunArgs& args) const override {
    const Da8w4Layout& lay = packed_.layout;
    const int64_t m = args.m;
    const int64_t qa_stride = QaRowStride(lay.k);
    const int64_t sums_stride = SumsRowStride(lay.groups());
    const int64_t sa_stride = SaRowStride(lay.groups(), desc_.act_per_group());
    const Scratch s = GetScratch(m, qa_stride, sums_stride, sa_stride);
    const int threads = Concurrency();

    const int64_t x_row_bytes =
        args.ldx * static_cast<int64_t>(DTypeSize(desc_.act_dtype));
    const int qchunks = static_cast<int>(std::min<int64_t>(m, threads));
    const QuantizedX quantized{
        XCall::Of(args),
        quantize_,
        perm_table_.empty() ? nullptr : perm_table_.data(),
        qa_stride,
        sums_stride,
        sa_stride};
    DeriveFromX(args, quantized, LastQuantizedX(), [&] {
      ParallelRun(qchunks, [&](int c) {
        const Range r = SplitRange(m, qchunks, c);
        if (r.end <= r.begin) return;
        ActQuantArgs qa{
            static_cast<const char*>(args.x) + r.begin * x_row_bytes,
            x_row_bytes,
            r.end - r.begin,
            s.qa + r.begin * qa_stride,
            s.sa + r.begin * (sa_stride / 4),
            s.sums + r.begin * (sums_stride / 4),
            perm_table_.empty() ? nullptr : perm_table_.data()};
        quantize_(&qa);
      });
    });

    // Row tiles: ceil(m / mr) tiles whose heights differ by at most one.
    // The AMX tiles run on decoded panels too.
    const Da8w4Path path = regime_.PathAt(m);
    const bool amx = path == Da8w4Path::kTiles;
    const bool decode = Decodes(path);
    const std::vector<TileKernels>& kernels = amx      ? amx_tiles_
                                              : decode ? panel_tiles_
                                                       : tiles_;
    const int64_t tiles = CeilDiv(m, amx      ? params_.amx_mr
                                     : decode ? params_.panel_mr
                                              : params_.mr);
    const int64_t base_rows = m / tiles, extra = m % tiles;
    auto tile_row0 = [&](int64_t t) {
      return t * base_rows + std::min(t, extra);
    };
    auto run_tiles = [&](int64_t t0, int64_t t1, int64_t b0, int64_t b1,
                         const uint8_t* w, int64_t block_bytes) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t row0 = tile_row0(t);
        const int rows = static_cast<int>(tile_row0(t + 1) - row0);
        RunTile(kernels[rows], s, args, row0, b0, b1, w, block_bytes);
      }
    };
    const int64_t blocks = lay.blocks();
    const int64_t align = kernels[base_rows + (extra > 0 ? 1 : 0)].nblk;
    const int64_t units = CeilDiv(blocks, align);
    const int64_t packed_block = lay.block_weight_bytes();
    if (path == Da8w4Path::kOnePass) {
      const int64_t panel = std::max<int64_t>(
          align, params_.panel_bytes / packed_block / align * align);
      const int parts = SmallMParts(blocks, threads, align);
      ParallelRun(parts, [&](int c) {
        const Range r = SplitRange(blocks, parts, c, align);
        for (int64_t p0 = r.begin; p0 < r.end; p0 += panel) {
          const int64_t p1 = std::min(r.end, p0 + panel);
          run_tiles(0, tiles, p0, p1,
                    packed_.weights.data() + p0 * packed_block, packed_block);
        }
      });
      return;
    }
    const int64_t block_bytes =
        decode ? lay.decoded_block_bytes() : packed_block;
    const GemmSplit2d split = PlanGemmSplit2d(
        tiles, units, params_.panel_bytes / block_bytes / align, threads);
    ParallelRun(static_cast<int>(split.items()), [&](int i) {
      const GemmWorkItem item = GemmSplit2dItem(split, tiles, units, i);
      const int64_t b0 = item.cols.begin * align;
      const int64_t b1 = std::min(blocks, item.cols.end * align);
      if (b1 <= b0 || item.rows.end <= item.rows.begin) return;
      const uint8_t* w = packed_.weights.data() + b0 * packed_block;
      if (decode) {
        uint8_t* panel = PanelScratch((b1 - b0) * block_bytes);
        const Da8w4DecodeArgs d{w, panel, (b1 - b0) * lay.k_quads()};
        (amx ? decode_amx_ : decode_)(&d);
        w = panel;
      }
      run_tiles(item.rows.begin, item.rows.end, b0, b1, w, block_bytes);
    });
  }

  size_t packed_bytes() const override {
    return packed_.bytes() + perm_table_.size() * sizeof(int32_t);
  }
  std::vector<std::string> kernel_names() const override { return names_; }
  // The tiles from the M Run hands them (the same test as Run's).
  LayerCompute compute_at(int64_t m) const override {
    if (params_.amx() && m > params_.handover_m && m >= params_.amx_min_m) {
      return {ComputeOp::kAmxInt8, 0};
    }
    return {ComputeOp::kInt8Dot, TraitsOf(isa_).vector_bytes * 8};
  }

 private:
  absl::Status Get(const Da8w4GemmConfig& c, Da8w4GemmFn* fn) {
    absl::StatusOr<std::shared_ptr<const Generator>> g = GetDa8w4GemmKernel(c);
    if (!g.ok()) return g.status();
    held_.push_back(*g);
    *fn = (*g)->entry<Da8w4GemmFn>();
    if (std::find(names_.begin(), names_.end(), (*g)->name()) == names_.end()) {
      names_.push_back((*g)->name());
    }
    return absl::OkStatus();
  }

  // Whether the last block has fewer output columns than the others (it
  // then runs the n_tail kernel).
  bool HasTail() const {
    const Da8w4Layout& lay = packed_.layout;
    if (desc_.epilogue.silu_mul) return desc_.out_n() % lay.lanes != 0;
    return lay.last_block_cols() < lay.block_cols();
  }
  int64_t OutBlockCols() const {
    const Da8w4Layout& lay = packed_.layout;
    return desc_.epilogue.silu_mul ? lay.lanes : lay.block_cols();
  }

  // The rows of one tile from row0 x column blocks [b0, b1) with the
  // kernels `tk` (of that tile height); the weights of block b (packed or
  // decoded) are at w + (b - b0) * block_bytes.
  void RunTile(const TileKernels& tk, const Scratch& s, const RunArgs& args,
               int64_t row0, int64_t b0, int64_t b1, const uint8_t* w,
               int64_t block_bytes) const {
    const Da8w4Layout& lay = packed_.layout;
    const bool has_tail = b1 == lay.blocks() && HasTail();
    const int64_t full = b1 - b0 - (has_tail ? 1 : 0);
    const int64_t steps = full / tk.nblk;
    const int64_t rest = full % tk.nblk;
    const int64_t out_bytes = DTypeSize(desc_.out_dtype);
    const int64_t ldy_bytes = args.ldy * out_bytes;
    const int64_t param_elems = lay.groups() * lay.block_cols();
    auto call = [&](Da8w4GemmFn fn, int64_t b, int64_t count) {
      if (count <= 0) return;
      Da8w4GemmArgs a;
      a.qa = s.qa + row0 * QaRowStride(lay.k);
      a.sums = s.sums + row0 * (SumsRowStride(lay.groups()) / 4);
      a.sa =
          s.sa + row0 * (SaRowStride(lay.groups(), desc_.act_per_group()) / 4);
      a.w = w + (b - b0) * block_bytes;
      a.scales = packed_.scales.data() + b * lay.block_scale_bytes();
      a.zeros = packed_.zeros.empty() ? nullptr
                                      : packed_.zeros.data() + b * param_elems;
      a.bias = packed_.bias.empty()
                   ? nullptr
                   : packed_.bias.data() + b * lay.block_cols();
      a.y = static_cast<char*>(args.y) + row0 * ldy_bytes +
            b * OutBlockCols() * out_bytes;
      a.ldy_bytes = ldy_bytes;
      for (int i = 0; i < 2; ++i) {
        const Epilogue& e = desc_.epilogue;
        if (i >= e.num_binary) {
          a.ep[i] = nullptr;
          a.ep_ld_bytes[i] = 0;
          continue;
        }
        const int64_t size = DTypeSize(e.binary[i].dtype);
        a.ep_ld_bytes[i] = args.ep_ld[i] * size;
        a.ep[i] = static_cast<const char*>(args.ep_data[i]) +
                  row0 * a.ep_ld_bytes[i] + b * OutBlockCols() * size;
      }
      a.steps = count;
      fn(&a);
    };
    call(tk.main, b0, steps);
    call(tk.one, b0 + steps * tk.nblk, rest);
    if (has_tail) call(tk.tail, b1 - 1, 1);
  }

  const LayerDesc desc_;
  const Da8w4Params params_;
  const Da8w4Regime regime_;
  const IsaTier isa_;
  const Da8w4Packed packed_;
  AlignedVector<int32_t> perm_table_;  // act-order: k_perm + padding, or empty
  // The generators of the entry points: the layer holds its kernels (the
  // cache may drop its reference at any time).
  std::vector<std::shared_ptr<const Generator>> held_;
  ActQuantFn quantize_ = nullptr;
  Da8w4DecodeFn decode_ = nullptr;        // packed -> decoded panel
  Da8w4DecodeFn decode_amx_ = nullptr;    // the same for the AMX tiles
  std::vector<TileKernels> tiles_;        // [rows], 1 .. mr: unpacking
  std::vector<TileKernels> panel_tiles_;  // [rows], 1 .. panel_mr: decoded
  std::vector<TileKernels> amx_tiles_;    // [rows], 1 .. amx_mr: AMX tiles
  std::vector<std::string> names_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LinearKernel>> MakeDa8w4JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier tier, const Da8w4Params& params, std::string* why_not) {
  if (TraitsOf(tier).vector_bytes == 0) {
    *why_not = "DA8W4 JIT kernels need AVX2";
    return std::unique_ptr<LinearKernel>();
  }
  if (desc.mode != Mode::kDA8W4) {
    return absl::InvalidArgumentError("MakeDa8w4JitKernel: not a DA8W4 layer");
  }
  if (w.groups > 1 && w.group_size % 4 != 0) {
    *why_not = absl::StrCat("group ", w.group_size, " is not a multiple of 4");
    return std::unique_ptr<LinearKernel>();
  }
  if (absl::Status s = CheckDa8w4Params(params, tier); !s.ok()) return s;
  // The vector kernels (and the tiles' vector code) are the SIMD tier's.
  const IsaTier isa = TraitsOf(tier).simd_tier;
  const int lanes = TraitsOf(isa).lanes32();
  // silu_mul: pack gate and up columns into the two halves of each block.
  std::optional<CanonicalWeights> interleaved;
  if (desc.epilogue.silu_mul) interleaved = InterleaveGateUp(w, lanes);
  const CanonicalWeights& packed_w = interleaved ? *interleaved : w;
  const Da8w4Layout layout =
      MakeDa8w4Layout(packed_w, lanes, params.scales_16bit, cpu.features.f16c);
  // AMX tiles where their K steps fit the groups; else the vector tiles
  // at every M (one log line says why).
  bool tiles = params.amx();
  if (tiles) {
    const Da8w4GemmConfig c = AmxTileConfig(desc, params, isa, layout, 1);
    if (absl::Status s = CheckDa8w4GemmConfig(c); !s.ok()) {
      Log(LogLevel::kInfo, absl::StrCat("layer n=", desc.n, " k=", desc.k,
                                        " keeps the AVX-512 kernels at large "
                                        "M: ",
                                        s.message()));
      tiles = false;
    }
  }
  const Da8w4Regime regime =
      MakeDa8w4Regime({params.handover_m, params.panels(), params.panel_min_m,
                       tiles, params.amx_min_m});
  // Shapes the generator cannot address (tiles over 2 GiB) run on the
  // reference; checked (for the vector tiles the regime runs) before the
  // (costly) packing.
  for (const bool decoded : {false, true}) {
    if (!UsesTiles(regime, decoded)) continue;
    for (int rows = decoded ? params.panel_mr : params.mr; rows >= 1; --rows) {
      const Da8w4GemmConfig c =
          TileConfig(desc, params, isa, layout, rows, decoded);
      if (absl::Status s = CheckDa8w4GemmConfig(c); !s.ok()) {
        *why_not = std::string(s.message());
        return std::unique_ptr<LinearKernel>();
      }
    }
  }
  // Packed as a call at M = 1 cuts it: tiles of one row (first touch).
  const int64_t m1_align = TileConfig(desc, params, isa, layout, 1, false).nblk;
  auto kernel = std::make_unique<Da8w4JitKernel>(
      desc, params, regime, isa, PackDa8w4(packed_w, layout, m1_align),
      w.k_perm);
  if (absl::Status s = kernel->Build(); !s.ok()) return s;
  return std::unique_ptr<LinearKernel>(std::move(kernel));
}

absl::StatusOr<std::unique_ptr<LinearKernel>> MakeDa8w4JitKernel(
    const LayerDesc& desc, const CanonicalWeights& w, const CpuProfile& cpu,
    IsaTier isa, std::string* why_not) {
  return MakeDa8w4JitKernel(desc, w, cpu, isa,
                            ResolveDa8w4Params(cpu, isa, desc), why_not);
}

}  // namespace w4jit::internal
