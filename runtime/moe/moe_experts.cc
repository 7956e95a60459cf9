#include "runtime/moe/moe_experts.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/memory.h"
#include "base/numeric.h"
#include "runtime/formats/import.h"
#include "runtime/make_kernel.h"
#include "runtime/moe/routing.h"
#include "runtime/moe/work_items.h"
#include "runtime/non_finite.h"
#include "runtime/threads/parallel.h"

namespace w4jit::internal {
namespace {

// Output columns per panel, about: wide enough that a panel's call
// overhead is small next to its weights (512 x H/2 bytes), narrow enough
// that the experts of a decode step give every thread work.
constexpr int64_t kPanelCols = 512;
// Up to this wide where one expert alone still has two panels per thread:
// each item quantized (DA8W4) or packed (W4A16) its rows of x again, which
// on Mixtral's experts (N = 14336, K = 4096) at 512 columns made the fused
// layer 4-16% slower than a Layer::Run per expert (2 threads, T >= 16);
// at 2048 it was level or faster. (Since then a thread's items after its
// first in a phase reuse that work: RunArgs::x_unchanged below.)
constexpr int64_t kMaxPanelCols = 2048;
// Panel boundaries on whole 64-column runs (any vector width).
constexpr int64_t kPanelAlign = 64;
// Columns of y per chunk of the weighted sum.
constexpr int64_t kSumCols = 512;

// The panels of a projection of n output columns for `threads` threads
// (the layer's at creation: the panels are fixed then, so the results
// do not depend on the thread count of a run).
std::vector<Range> PanelColumns(int64_t n, int threads) {
  const int64_t width = std::clamp<int64_t>(n / (2 * std::max(threads, 1)),
                                            kPanelCols, kMaxPanelCols);
  const int64_t units = (n + kPanelAlign - 1) / kPanelAlign;
  const int panels =
      static_cast<int>(std::clamp<int64_t>((n + width / 2) / width, 1, units));
  std::vector<Range> out;
  for (int p = 0; p < panels; ++p) {
    const Range r = SplitRange(units, panels, p);
    out.push_back({r.begin * kPanelAlign, std::min(n, r.end * kPanelAlign)});
  }
  return out;
}

// Rows `ranges` of w, concatenated, in a canonical matrix of their own.
CanonicalWeights SliceRows(const CanonicalWeights& w,
                           const std::vector<Range>& ranges) {
  CanonicalWeights s;
  s.k = w.k;
  s.group_size = w.group_size;
  s.groups = w.groups;
  s.asymmetric = w.asymmetric;
  s.k_perm = w.k_perm;
  for (const Range& r : ranges) {
    s.n += r.end - r.begin;
    s.u.insert(s.u.end(), w.u.begin() + r.begin * w.k,
               w.u.begin() + r.end * w.k);
    s.scales.insert(s.scales.end(), w.scales.begin() + r.begin * w.groups,
                    w.scales.begin() + r.end * w.groups);
    s.zeros.insert(s.zeros.end(), w.zeros.begin() + r.begin * w.groups,
                   w.zeros.begin() + r.end * w.groups);
    if (!w.bias.empty()) {
      s.bias.insert(s.bias.end(), w.bias.begin() + r.begin,
                    w.bias.begin() + r.end);
    }
  }
  return s;
}

LayerDesc CommonDesc(const MoeDesc& d) {
  LayerDesc l;
  l.group_size = d.group_size;
  l.weight_type = d.weight_type;
  l.scale_dtype = d.scale_dtype;
  l.mode = d.mode;
  l.act_quant = d.act_quant;
  l.bias_dtype = d.bias_dtype;
  l.allow_bf16_compute = d.allow_bf16_compute;
  l.out_dtype = DType::kF32;
  return l;
}

}  // namespace

CanonicalWeights SplitInterleavedRows(const CanonicalWeights& w) {
  const int64_t half = w.n / 2;
  std::vector<Range> rows;
  for (int64_t r = 0; r < half; ++r) rows.push_back({2 * r, 2 * r + 1});
  for (int64_t r = 0; r < half; ++r) rows.push_back({2 * r + 1, 2 * r + 2});
  return SliceRows(w, rows);
}

DType MoeIntermediateDType(const MoeDesc& d) {
  return d.mode == Mode::kW4A16 &&
                 (d.allow_bf16_compute || d.act_dtype == DType::kBF16)
             ? DType::kBF16
             : DType::kF32;
}

LayerDesc MoeW13Desc(const MoeDesc& d) {
  LayerDesc l = CommonDesc(d);
  l.n = 2 * d.intermediate;
  l.k = d.hidden;
  l.act_dtype = d.act_dtype;
  l.out_dtype = MoeIntermediateDType(d);
  l.has_bias = d.has_w13_bias;
  l.epilogue.silu_mul = true;
  // The silu gate as plain silu_mul layers spell it: the same kernels.
  l.epilogue.activation =
      d.activation == Activation::kSilu ? Activation::kNone : d.activation;
  if (d.activation == Activation::kSwigluOai) {
    l.epilogue.gate_alpha = d.swiglu_alpha;
    l.epilogue.gate_limit = d.swiglu_limit;
  }
  return l;
}

LayerDesc MoeW2Desc(const MoeDesc& d) {
  LayerDesc l = CommonDesc(d);
  l.n = d.hidden;
  l.k = d.intermediate;
  l.act_dtype = MoeIntermediateDType(d);
  l.has_bias = d.has_w2_bias;
  // A bf16 layer's h is bf16, as a host's bf16 MoE stores it: W4A16 then
  // runs w2 on the bf16-dot flavour where the CPU has it instead of f32
  // FMAs on f32 x, which on Zen 4/5 made Mixtral's fused layer 1.2-1.4x
  // slower than a Python loop of bf16 layer calls (the f32-x decode costs
  // twice the dot's). Until 2026-12-07 h stayed f32 and only the paths
  // that compute in bf16 rounded it, so an expert's output changed with
  // its row count (the vector kernels below amx_min_m rows, the tiles
  // from it) and tiny models in the vLLM lane parted from vLLM's tokens.
  l.allow_bf16_compute = d.allow_bf16_compute;
  return l;
}

absl::StatusOr<std::unique_ptr<MoeExperts>> MoeExperts::Create(
    const MoeDesc& desc, const MoeWeights& weights, bool force_reference) {
  std::unique_ptr<MoeExperts> m(new MoeExperts(desc));
  m->w13_.cols = PanelColumns(desc.intermediate, Concurrency());
  m->w2_.cols = PanelColumns(desc.hidden, Concurrency());
  for (Projection* p : {&m->w13_, &m->w2_}) {
    for (const Range& r : p->cols) p->widths.push_back(r.end - r.begin);
  }
  for (int64_t e = 0; e < desc.experts; ++e) {
    if (absl::Status s = m->AddExpert(e, weights, force_reference); !s.ok()) {
      return s;
    }
  }
  return m;
}

absl::Status MoeExperts::AddExpert(int64_t e, const MoeWeights& weights,
                                   bool force_reference) {
  const LayerDesc d13 = MoeW13Desc(desc_);
  const LayerDesc d2 = MoeW2Desc(desc_);
  auto w13 = ImportWeights(d13, weights.w13[e]);
  if (!w13.ok()) {
    return absl::Status(
        w13.status().code(),
        absl::StrCat("expert ", e, " w13: ", w13.status().message()));
  }
  auto w2 = ImportWeights(d2, weights.w2[e]);
  if (!w2.ok()) {
    return absl::Status(
        w2.status().code(),
        absl::StrCat("expert ", e, " w2: ", w2.status().message()));
  }
  if (desc_.activation == Activation::kSwigluOai) {
    *w13 = SplitInterleavedRows(*w13);
  }
  const int64_t inter = desc_.intermediate;
  for (const Range& c : w13_.cols) {
    // The panel's gate rows and their up rows: a gated layer of its own.
    LayerDesc d = d13;
    d.n = 2 * (c.end - c.begin);
    auto k = MakeLinearKernel(
        d, SliceRows(*w13, {c, {inter + c.begin, inter + c.end}}),
        force_reference);
    if (!k.ok()) return k.status();
    w13_.kernels.push_back(*std::move(k));
  }
  for (const Range& c : w2_.cols) {
    LayerDesc d = d2;
    d.n = c.end - c.begin;
    auto k = MakeLinearKernel(d, SliceRows(*w2, {c}), force_reference);
    if (!k.ok()) return k.status();
    w2_.kernels.push_back(*std::move(k));
  }
  return absl::OkStatus();
}

void MoeExperts::RunPhase(const Projection& p, const Routing& routing,
                          const char* x, int64_t ldx, size_t x_size,
                          bool x_follows_rows, char* y, int64_t ldy,
                          size_t y_size) const {
  const int64_t panels = static_cast<int64_t>(p.cols.size());
  const std::vector<MoeItem> items =
      MakeMoeItems(routing, desc_.experts, panels);
  const std::vector<int64_t> bounds =
      ChunkMoeItems(items, p.widths, Concurrency());
  // A kernel's scratch can fail to allocate on a worker: the failure is
  // carried back and rethrown on the caller.
  std::atomic<size_t> failed_bytes{0};
  ParallelRun(static_cast<int>(bounds.size() - 1), [&](int c) {
    InlineScope inline_kernels;
    try {
      for (int64_t i = bounds[c]; i < bounds[c + 1]; ++i) {
        const MoeItem& it = items[i];
        const Range& cols = p.cols[it.panel];
        RunArgs a{};
        a.m = it.rows.end - it.rows.begin;
        const int64_t x_row = x_follows_rows ? it.rows.begin : 0;
        a.x = x + x_row * ldx * static_cast<int64_t>(x_size);
        a.ldx = ldx;
        a.y = y +
              (it.rows.begin * ldy + cols.begin) * static_cast<int64_t>(y_size);
        a.ldy = ldy;
        // No call of the phase changes x: from the chunk's second item on,
        // x holds what this thread's previous call saw (so an expert's
        // panels after its first reuse its packed rows).
        a.x_unchanged = i > bounds[c];
        p.kernels[it.expert * panels + it.panel]->Run(a);
      }
    } catch (const AllocationError& e) {
      failed_bytes.store(std::max<size_t>(e.bytes(), 1));
    } catch (const std::bad_alloc&) {
      failed_bytes.store(1);
    }
  });
  if (const size_t bytes = failed_bytes.load(); bytes != 0) {
    throw AllocationError(bytes);
  }
}

void MoeExperts::Run(int64_t t, const void* x, int64_t ldx, const int32_t* ids,
                     const float* weights, int64_t k, void* y, int64_t ldy,
                     const MoeRunOptions& options, const uint8_t* skip) const {
  const int64_t hidden = desc_.hidden;
  const int64_t inter = desc_.intermediate;
  const Routing routing = GroupByExpert(t, k, desc_.experts, ids, skip);
  // The routed rows: t * k less the skipped tokens' slots.
  const int64_t rows = routing.offset[desc_.experts];
  const size_t x_size = DTypeSize(desc_.act_dtype);

  // x rows in expert order. One token routed to distinct experts needs no
  // copy: each expert's single row is x itself.
  const char* xs = static_cast<const char*>(x);
  int64_t ldxs = ldx;
  // The buffers of a call are filled whole by the worker threads (the
  // gather, then the two phases: every routed row's every column), so they
  // are not zeroed first: at T = 512 on Qwen3-30B-A3B that was 45 MB of
  // zero fill on the calling thread, about a tenth of the call.
  FirstTouchVector<char> gathered;
  bool distinct = t == 1;
  for (int64_t e = 0; distinct && e < desc_.experts; ++e) {
    distinct = routing.rows(e) <= 1;
  }
  if (!distinct) {
    gathered.resize(static_cast<size_t>(rows * hidden) * x_size);
    const size_t row_bytes = static_cast<size_t>(hidden) * x_size;
    const int chunks = static_cast<int>(std::min<int64_t>(
        Concurrency(), std::max<int64_t>(1, rows * hidden / (64 * 1024))));
    ParallelRun(chunks, [&](int c) {
      const Range r = SplitRange(rows, chunks, c);
      for (int64_t p = r.begin; p < r.end; ++p) {
        std::memcpy(gathered.data() + p * row_bytes,
                    xs + routing.slot_at[p] / k * ldx * x_size, row_bytes);
      }
    });
    xs = gathered.data();
    ldxs = hidden;
  }

  FirstTouchVector<float> o(static_cast<size_t>(rows * hidden));
  if (rows > 0) {
    const size_t h_size = DTypeSize(MoeIntermediateDType(desc_));
    FirstTouchVector<char> h(static_cast<size_t>(rows * inter) * h_size);
    RunPhase(w13_, routing, xs, ldxs, x_size, !distinct, h.data(), inter,
             h_size);
    RunPhase(w2_, routing, h.data(), inter, h_size, true,
             reinterpret_cast<char*>(o.data()), hidden, sizeof(float));
  }
  WeightedSum(t, k, routing, o.data(), weights, y, ldy, options, skip);
}

void MoeExperts::WeightedSum(int64_t t, int64_t k, const Routing& routing,
                             const float* o, const float* weights, void* y,
                             int64_t ldy, const MoeRunOptions& options,
                             const uint8_t* skip) const {
  // y[i] = sum_j w[i, j] * o[pos(i, j)], j in order: every element is the
  // same sum of the same terms whatever the chunking.
  const int64_t hidden = desc_.hidden;
  const int64_t col_blocks = (hidden + kSumCols - 1) / kSumCols;
  const int64_t units = t * col_blocks;
  const int chunks = static_cast<int>(std::min<int64_t>(
      Concurrency(), std::max<int64_t>(1, units * kSumCols / 4096)));
  const DType out = desc_.out_dtype;
  const size_t out_size = DTypeSize(out);
  ParallelRun(chunks, [&](int c) {
    const Range r = SplitRange(units, chunks, c);
    float acc[kSumCols];
    for (int64_t u = r.begin; u < r.end; ++u) {
      const int64_t i = u / col_blocks;
      const int64_t c0 = u % col_blocks * kSumCols;
      const int64_t n = std::min(kSumCols, hidden - c0);
      const int64_t base = i * ldy + c0;
      if (skip != nullptr && skip[i] != 0) {
        // A skipped token (NonFinitePolicy::kPropagate): NaN, whatever y
        // held, as the sum over its bad input would be.
        FillNaN(out, static_cast<char*>(y) + base * out_size, n);
        continue;
      }
      std::fill(acc, acc + n, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t s = i * k + j;
        const float w = options.unweighted ? 1.0f : weights[s];
        const float* row = o + routing.pos_of[s] * hidden + c0;
        for (int64_t q = 0; q < n; ++q) acc[q] += w * row[q];
      }
      if (out == DType::kF32) {
        float* yr = static_cast<float*>(y) + base;
        for (int64_t q = 0; q < n; ++q) {
          yr[q] = options.accumulate ? yr[q] + acc[q] : acc[q];
        }
      } else {
        uint16_t* yr = static_cast<uint16_t*>(y) + base;
        for (int64_t q = 0; q < n; ++q) {
          const float v =
              options.accumulate ? Bf16ToF32(yr[q]) + acc[q] : acc[q];
          yr[q] = F32ToBf16(v);
        }
      }
    }
  });
}

size_t MoeExperts::packed_bytes() const {
  return expert_packed_bytes() * static_cast<size_t>(desc_.experts);
}

size_t MoeExperts::expert_packed_bytes() const {
  size_t bytes = 0;
  for (const Projection* p : {&w13_, &w2_}) {
    for (size_t i = 0; i < p->cols.size(); ++i) {
      bytes += p->kernels[i]->packed_bytes();
    }
  }
  return bytes;
}

std::vector<std::string> MoeExperts::kernel_names() const {
  std::set<std::string> names;
  for (const Projection* p : {&w13_, &w2_}) {
    for (const auto& kernel : p->kernels) {
      for (std::string& n : kernel->kernel_names()) names.insert(std::move(n));
    }
  }
  return {names.begin(), names.end()};
}

}  // namespace w4jit::internal
