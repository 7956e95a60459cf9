"""w4jit beside zentorch (and torch's own int4 matmul), in one process,
called as vLLM calls them, in the host's own mode.

    python3 -m w4jit.bench.zentorch [--threads 2] [--quick]
        [--m 1,4,16,64,256] [--tokens 1,4,16,64] [--layers ...]
        [--host-modes inference,no_grad] [--min-time 0.3] [--skip-moe]
        [--json out.json]

Every layer is built by both libraries from the same checkpoint tensors
(s4 weights of random nibbles, group 128, bf16 scales [G, N] as vLLM's
kernel class passes them, bf16 activations): zentorch's own repack op
(zentorch_woq_repack_weight) for zentorch, w4jit's for w4jit.

Host modes (--host-modes): every cell is built and timed once per mode,
its tensors made inside it: "inference" (torch.inference_mode(), where
zentorch's tests, vLLM's forward pass and scripts that load a model there
run; every tensor is an inference tensor) and "no_grad" (normal tensors
with version counters). The op path should cost what the w4jit.Linear /
w4jit.MoE modules cost in both; the `overhead` lines say by how much it
does not (op p50 - module p50 on the same layer, same rounds).

Before anything is timed each output is checked against a float64
reference (the dequantized weight q * s in f64 times x) and against the
other library: the largest difference in bf16 ulps of |y| (one ulp of
|y_ref| at each element; 0.5 is the best a bf16 output can do; |y| is
taken as at least its row's RMS, so that outputs that cancel to near zero
do not count their terms' f32 rounding as many of their own ulps). A side
whose output is not finite, or more than --max-ulps away from the
reference, is reported with its error and left out of the timing
(zentorch's kernels need AVX512_BF16: on a CPU without it, AOCL prints a
warning and returns garbage).

Then each cell is timed interleaved (one call of each side in turn, so
that a busy machine slows all of them alike), and the table gives min and
p50 microseconds per call and the ratios zentorch / w4jit (above 1: w4jit
is faster):

  woq_linear       zentorch_woq_linear vs w4jit::woq_linear (W4A16) and
                   the w4jit.Linear module, on the four Llama-3-8B
                   projections at each M, called as vLLM's kernel class
                   calls them (repacked.t(), scales [G, N]); beside them
                   torch.ops.aten._weight_int4pack_mm_for_cpu (torch's
                   int4 path, torchao's "tinygemm") on the same weights
                   (u4 = q + 8, float zero point 0, bf16 scales), and
                   w4jit under W4JIT_NUMERICS=zentorch (the AOCL-compatible
                   rounding, docs/numerics-zentorch.md);
  dynamic_qlinear  zentorch_dynamic_qlinear on the packed s4 bytes
                   [N, K/2] vLLM passes (zentorch_woq_repack_weight(q)
                   .view(torch.int8), the headline) vs
                   w4jit::dynamic_qlinear on the same form of its own
                   repack and the w4jit.Linear DA8W4 module; zentorch on
                   int8 [N, K] (one s4 value per byte, which it runs as a
                   W8A8 GEMM at twice the bytes) is the extra column
                   zentorch_dq_int8;
  fused_moe        zentorch_fused_moe vs w4jit::fused_moe (vLLM's
                   positional call) and the w4jit.MoE module on a
                   Qwen3-30B-A3B MoE layer (H 2048, I 768, 128 experts,
                   top 8) with the same int32-packed s4 experts, at each
                   token count T.

zentorch runs with its weight cache on (its default), which is keyed on
the weight's address: every zentorch weight this bench makes is kept
alive to the end of the run, so that no later weight is allocated at a
freed one's address (where zentorch would serve the old weight's layer).

--quick runs small shapes only (the CI smoke test,
tests/python/test_bench_peer.py). Without zentorch installed the zentorch
columns say so and the rest still runs.
"""
import argparse
import json
import os
import sys

import torch

import w4jit  # loads torch.ops.w4jit
from w4jit.bench import presets, timing
from w4jit.bench.layers import bench_header

OPS = torch.ops.w4jit
LAYERS = presets.dense_layers("llama3-8b")  # name: (N, K)
QUICK_LAYERS = {"quick": (256, 512)}
MOE = {"qwen3-30b-a3b": presets.moe_layers()["qwen3-30b-a3b"]}  # H, I, E, top-k
QUICK_MOE = {"quick": (256, 128, 8, 2)}
GROUP = 128
HOST_MODES = {"inference": torch.inference_mode, "no_grad": torch.no_grad}
# zentorch's weights, kept alive to the end (its weight cache is keyed on
# the address: a freed weight's address reused would serve a stale layer).
_ZENTORCH_KEEP = []


def load_zentorch(force=False):
    """(module, None) or (None, why not). zentorch's kernels need AVX-512
    (AOCL-DLP's int8 kernels die of SIGILL without it, which no Python code
    can catch) and AVX512_BF16 for woq_linear (without it AOCL prints a
    warning and returns garbage): on a CPU without them zentorch is not
    called unless `force` (then only woq_linear, whose wrong output the
    checks catch)."""
    try:
        import zentorch  # noqa: F401
    except Exception as e:  # not installed, or fails to load
        return None, f"not installed ({type(e).__name__}: {e})"
    if getattr(zentorch, "__w4jit__", False):
        return None, "the stand-in of tests/zentorch_compat, not zentorch"
    if not force and not (zentorch._C.is_avx512_supported() and
                          zentorch._C.is_bf16_supported()):
        return None, ("installed, but this CPU lacks AVX-512 / AVX512_BF16, "
                      "which its kernels need (woq_linear returns garbage, "
                      "dynamic_qlinear dies of SIGILL): not called")
    return zentorch, None


def zentorch_has_avx512(zen):
    return zen is not None and zen._C.is_avx512_supported()


def bf16_ulps(got, want):
    """max |got - want| in bf16 ulps of |want| (f64 tensors), where |want|
    is taken as at least its row's RMS: an output that cancels to near 0
    would otherwise count an f32 rounding of its terms as thousands of its
    own ulps."""
    rms = want.pow(2).mean(dim=-1, keepdim=True).sqrt()
    a = torch.maximum(want.abs(), rms).clamp(min=2.0**-126)
    ulp = torch.exp2(torch.floor(torch.log2(a)) - 7)
    return float(((got - want).abs() / ulp).max())


def check(name, fn, ref, max_ulps):
    """Runs fn once: (ulps vs ref, None), or (None, why it is left out)."""
    try:
        y = fn()
    except Exception as e:
        return None, None, f"{type(e).__name__}: {str(e).splitlines()[0]}"
    y = y.double()
    if not torch.isfinite(y).all():
        return None, None, "output not finite"
    u = bf16_ulps(y, ref)
    if u > max_ulps:
        return None, y, f"{u:.3g} bf16 ulps from the f64 reference"
    return u, y, None


def time_interleaved(calls, min_time, min_reps=5, max_reps=2000):
    """name -> (min, p50) seconds, the calls made in turn."""
    times = timing.time_interleaved(calls, min_time, min_reps, max_reps)
    return {k: timing.min_p50(v) for k, v in times.items()}


class Numerics:
    """Sets W4JIT_NUMERICS for the calls inside (read per call by the ops,
    which cache one layer per numerics)."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.old = os.environ.get("W4JIT_NUMERICS")
        os.environ["W4JIT_NUMERICS"] = self.value

    def __exit__(self, *exc):
        if self.old is None:
            os.environ.pop("W4JIT_NUMERICS", None)
        else:
            os.environ["W4JIT_NUMERICS"] = self.old


def with_numerics(value, fn):
    def call():
        with Numerics(value):
            return fn()
    return call


def s4_layer(n, k, gen):
    """q int8 [N, K] in [-8, 7]; scales bf16 [G, N] (a compressed-tensors
    checkpoint's scales, transposed, as vLLM's kernel class passes them)."""
    q = torch.randint(-8, 8, (n, k), dtype=torch.int8, generator=gen)
    s = (torch.rand(k // GROUP, n, generator=gen) * 0.02 + 0.001)
    return q, s.bfloat16()


def dequant_f64(q, s):
    n, k = q.shape
    return (q.double().reshape(n, -1, GROUP) *
            s.double().t().unsqueeze(-1)).reshape(n, k)


def linear_cells(zen, name, n, k, ms, args, gen, host):
    """Rows for one projection at each M, its tensors made (and timed) in
    the caller's host mode."""
    q, s = s4_layer(n, k, gen)
    w64 = dequant_f64(q, s)
    # vLLM's kernel class: woq_linear gets repacked.t() (int32 [K/8, N]),
    # dynamic_qlinear the same words as s4 bytes int8 [N, K/2], both made
    # once at load time; scales [G, N].
    ours = OPS.woq_repack_weight(q)                 # int32 [N, K/8]
    ours_t = ours.t()
    ours_bytes = ours.view(torch.int8)              # s4 pairs [N, K/2]
    lin16 = w4jit.Linear.from_zentorch(ours, s, mode="w4a16",
                                       numerics="exact")
    lin8 = w4jit.Linear.from_zentorch(ours, s, mode="da8w4")
    theirs = theirs_bytes = theirs_int8 = None
    if zen is not None:
        try:
            theirs = torch.ops.zentorch.zentorch_woq_repack_weight(q)
            _ZENTORCH_KEEP.append(theirs)
        except Exception as e:
            theirs = e
        if zentorch_has_avx512(zen):
            if isinstance(theirs, torch.Tensor):
                theirs_bytes = theirs.view(torch.int8)  # [N, K/2]
            theirs_int8 = q.contiguous()  # int8 [N, K], s4 values
            _ZENTORCH_KEEP.append(theirs_int8)
    theirs_t = theirs.t() if isinstance(theirs, torch.Tensor) else None
    # torch's int4pack: u = q + 8 with float zero point 0 (w = (u-8) s).
    tiny = None
    try:
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(
            (q.int() + 8).contiguous(), 1)
        sz = torch.stack([s, torch.zeros_like(s)], dim=-1).bfloat16()
        tiny = (packed, sz.contiguous())
    except Exception as e:
        tiny = e
    rows = []
    for m in ms:
        x = torch.randn(m, k, generator=gen).bfloat16()
        ref = x.double() @ w64.t()
        ref_zn = x.double() @ (q.float().reshape(n, -1, GROUP) *
                               s.float().t().unsqueeze(-1)).reshape(n, k) \
            .bfloat16().double().t()
        cells = {}  # column -> (fn, reference)
        cells["w4jit_woq"] = (with_numerics("exact", lambda: OPS.woq_linear(
            x, ours_t, s, None, None)), ref)
        cells["w4jit_linear_w4a16"] = (lambda: lin16(x), ref)
        cells["w4jit_woq_zn"] = (with_numerics(
            "zentorch", lambda: OPS.woq_linear(x, ours_t, s, None, None)),
            ref_zn)
        if theirs_t is not None:
            cells["zentorch_woq"] = (
                lambda: torch.ops.zentorch.zentorch_woq_linear(
                    x, theirs_t, s, None, None), ref)
        if isinstance(tiny, tuple):
            cells["torch_int4pack"] = (
                lambda: torch.ops.aten._weight_int4pack_mm_for_cpu(
                    x, tiny[0], GROUP, tiny[1]), ref)
        cells["w4jit_dq"] = (lambda: OPS.dynamic_qlinear(
            x, ours_bytes, s, None), ref)
        cells["w4jit_linear_da8w4"] = (lambda: lin8(x), ref)
        if theirs_bytes is not None:
            cells["zentorch_dq"] = (
                lambda: torch.ops.zentorch.zentorch_dynamic_qlinear(
                    x, theirs_bytes, s, None), ref)
        if theirs_int8 is not None:
            cells["zentorch_dq_int8"] = (
                lambda: torch.ops.zentorch.zentorch_dynamic_qlinear(
                    x, theirs_int8, s, None), ref)
        row = {"op": "linear", "layer": name, "n": n, "k": k, "m": m,
               "host": host, "ulps": {}, "skipped": {}, "times": {}}
        outputs = {}
        timed = {}
        for col, (fn, want) in cells.items():
            # DA8W4 quantizes x to int8: its error against the f64
            # reference is far above an ulp; it is compared with the other
            # library's DA8W4 only, and checked for being finite.
            dq = "_dq" in col or col.endswith("da8w4")
            u, y, why = check(col, fn, want,
                              float("inf") if dq else args.max_ulps)
            if why is None and dq:
                rel = float((y - want).norm() / want.norm())
                row.setdefault("rel_l2", {})[col] = rel
                if rel > args.max_dq_rel:
                    why = f"relative L2 error {rel:.3g}"
            if why is not None:
                row["skipped"][col] = why
                continue
            row["ulps"][col] = u
            outputs[col] = y
            timed[col] = fn
        for a, b in (("zentorch_woq", "w4jit_woq_zn"),
                     ("zentorch_woq", "w4jit_woq"),
                     ("zentorch_dq", "w4jit_dq")):
            if a in outputs and b in outputs:
                row["ulps"][f"{a}~{b}"] = bf16_ulps(outputs[a], outputs[b])
        row["times"] = time_interleaved(timed, args.min_time)
        rows.append(row)
        print(f"  {host} {name} M={m} done", file=sys.stderr, flush=True)
    return rows


def moe_rows(zen, name, shape, tokens, args, gen, host):
    h, inter, e, topk = shape
    w13_q = torch.randint(-8, 8, (e, 2 * inter, h), dtype=torch.int8,
                          generator=gen)
    w2_q = torch.randint(-8, 8, (e, h, inter), dtype=torch.int8,
                         generator=gen)
    w13 = torch.stack([OPS.woq_repack_weight(w13_q[i]) for i in range(e)])
    w2 = torch.stack([OPS.woq_repack_weight(w2_q[i]) for i in range(e)])

    def scales(g, n):
        return (torch.rand(e, g, n, generator=gen) * 0.02 + 0.001) \
            .bfloat16()

    s13 = scales(h // GROUP, 2 * inter)
    s2 = scales(inter // GROUP, h)
    # zentorch's copies of the same experts, kept alive (its weight cache).
    z13, z2 = w13.clone(), w2.clone()
    _ZENTORCH_KEEP.extend([z13, z2])
    module = w4jit.MoE.from_zentorch(w13, s13, w2, s2, mode="da8w4")
    rows = []
    for t in tokens:
        x = torch.randn(t, h, generator=gen).bfloat16()
        ids = torch.rand(t, e, generator=gen).argsort(dim=1)[:, :topk].int()
        wts = torch.rand(t, topk, generator=gen) + 0.1
        wts = (wts / wts.sum(dim=1, keepdim=True)).float()
        # f64 reference: per token, sum_j w_j * down(silu(gate) * up),
        # expert by expert (each dequantized once).
        ref = torch.zeros(t, h, dtype=torch.float64)
        for ex in ids.unique().tolist():
            tok, j = (ids == ex).nonzero(as_tuple=True)
            g = x[tok].double() @ dequant_f64(w13_q[ex], s13[ex]).t()
            act = torch.nn.functional.silu(g[:, :inter]) * g[:, inter:]
            y = act @ dequant_f64(w2_q[ex], s2[ex]).t()
            ref.index_add_(0, tok, y * wts[tok, j].double().unsqueeze(1))

        def ours():  # vLLM's positional call (mode "auto": DA8W4 here)
            out = torch.empty(t, h, dtype=torch.bfloat16)
            OPS.fused_moe(out, x, w13, w2, None, None, wts, ids, False,
                          "silu", s13, s2)
            return out

        def ours_module():
            return module(x, ids, wts)

        def ours_w4a16():
            out = torch.empty(t, h, dtype=torch.bfloat16)
            OPS.fused_moe(out, x, w13, w2, None, None, wts, ids, False,
                          "silu", s13, s2, mode="w4a16")
            return out

        def theirs():
            out = torch.empty(t, h, dtype=torch.bfloat16)
            torch.ops.zentorch.zentorch_fused_moe(
                out, x, z13, z2, None, None, wts, ids, False, "silu", s13,
                s2)
            return out

        cells = {"w4jit_moe_da8w4": ours, "w4jit_moe_module_da8w4":
                 ours_module, "w4jit_moe_w4a16": ours_w4a16}
        if zentorch_has_avx512(zen):
            cells["zentorch_moe"] = theirs
        row = {"op": "fused_moe", "layer": name, "n": h, "k": inter,
               "m": t, "host": host, "ulps": {}, "skipped": {}, "times": {}}
        timed, outputs = {}, {}
        for col, fn in cells.items():
            # DA8W4 twice over (x and the intermediate): a relative L2
            # error, not ulps, says how close it is.
            u, y, why = check(col, fn, ref, float("inf"))
            if why is not None:
                row["skipped"][col] = why
                continue
            rel = float((y - ref).norm() / ref.norm())
            row["ulps"][col] = u
            row.setdefault("rel_l2", {})[col] = rel
            if col != "w4jit_moe_w4a16" and rel > args.max_moe_rel:
                row["skipped"][col] = f"relative L2 error {rel:.3g}"
                continue
            outputs[col] = y
            timed[col] = fn
        row["times"] = time_interleaved(timed, args.min_time)
        rows.append(row)
        print(f"  {host} {name} T={t} done", file=sys.stderr, flush=True)
    return rows


def us(v):
    return f"{v * 1e6:9.1f}"


def table(rows, zen_why):
    out = []
    if zen_why:
        out.append(f"zentorch: {zen_why}")
    pairs = {"linear": [("zentorch_woq", "w4jit_woq"),
                        ("zentorch_woq", "w4jit_woq_zn"),
                        ("torch_int4pack", "w4jit_woq"),
                        ("zentorch_dq", "w4jit_dq"),
                        ("zentorch_dq_int8", "w4jit_dq")],
             "fused_moe": [("zentorch_moe", "w4jit_moe_da8w4")]}
    # The op path against the module on the same layer: the per-call cost
    # of the op (argument checks, the cache look-up, the weight check).
    overheads = {"linear": [("w4jit_woq", "w4jit_linear_w4a16"),
                            ("w4jit_dq", "w4jit_linear_da8w4")],
                 "fused_moe": [("w4jit_moe_da8w4", "w4jit_moe_module_da8w4")]}
    for r in rows:
        head = f"{r['op']} {r['layer']} N={r['n']} K={r['k']} " \
               f"{'T' if r['op'] == 'fused_moe' else 'M'}={r['m']} " \
               f"({r.get('host', '?')})"
        out.append(head)
        for col, (tmin, tp50) in r["times"].items():
            u = r["ulps"].get(col)
            extra = f"  {u:6.2f} ulps" if u is not None else ""
            if "rel_l2" in r and col in r["rel_l2"]:
                extra = f"  rel L2 {r['rel_l2'][col]:.2e}"
            out.append(f"  {col:18s} min {us(tmin)} us  p50 {us(tp50)} us"
                       f"{extra}")
        for a, b in pairs[r["op"]]:
            if a in r["times"] and b in r["times"]:
                ta, tb = r["times"][a], r["times"][b]
                out.append(f"  {a}/{b}: min {ta[0] / tb[0]:.2f}x  "
                           f"p50 {ta[1] / tb[1]:.2f}x")
        for a, b in overheads[r["op"]]:
            if a in r["times"] and b in r["times"]:
                ta, tb = r["times"][a], r["times"][b]
                out.append(f"  overhead {a} - {b}: p50 "
                           f"{(ta[1] - tb[1]) * 1e6:+.1f} us "
                           f"({ta[1] / tb[1]:.3f}x), min "
                           f"{(ta[0] - tb[0]) * 1e6:+.1f} us")
        for k, v in r["ulps"].items():
            if "~" in k:
                out.append(f"  {k}: {v:.2f} bf16 ulps apart")
        for col, why in r["skipped"].items():
            out.append(f"  {col}: not timed: {why}")
    return "\n".join(out)


def ints(text):
    return [int(v) for v in text.split(",") if v]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--m", type=ints, default=None)
    p.add_argument("--tokens", type=ints, default=None)
    p.add_argument("--layers", default=None,
                   help="comma-separated, of " + ",".join(LAYERS))
    p.add_argument("--min-time", type=float, default=0.3)
    p.add_argument("--max-ulps", type=float, default=64.0,
                   help="W4A16 outputs further than this from the f64 "
                        "reference are wrong and not timed")
    p.add_argument("--max-dq-rel", type=float, default=0.05,
                   help="DA8W4 outputs with a larger relative L2 error "
                        "against the f64 reference are not timed")
    p.add_argument("--max-moe-rel", type=float, default=0.1)
    p.add_argument("--skip-moe", action="store_true")
    p.add_argument("--host-modes", default="inference,no_grad",
                   help="comma-separated, of " + ",".join(HOST_MODES) +
                   ": each cell's tensors are made and timed in each")
    p.add_argument("--json", default=None)
    p.add_argument("--force-zentorch", action="store_true",
                   help="call zentorch's woq_linear even where the CPU "
                        "lacks AVX512_BF16 (its output is checked)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    layers = QUICK_LAYERS if args.quick else LAYERS
    if args.layers:
        layers = {k: LAYERS[k] for k in args.layers.split(",")}
    ms = args.m or ([1, 4] if args.quick else [1, 4, 16, 64, 256])
    tokens = args.tokens or ([1, 4] if args.quick else [1, 4, 16, 64])
    hosts = [h for h in args.host_modes.split(",") if h]
    for h in hosts:
        if h not in HOST_MODES:
            p.error(f"--host-modes: '{h}' is not one of "
                    f"{', '.join(HOST_MODES)}")
    if args.quick:
        args.min_time = min(args.min_time, 0.05)
    zen, zen_why = load_zentorch(args.force_zentorch)
    gen = torch.Generator().manual_seed(0)
    print(bench_header("w4jit vs zentorch", GROUP, "bf16 x and y, f32 "
                       "scales"), flush=True)
    rows = []
    for name, (n, k) in layers.items():
        for host in hosts:
            with HOST_MODES[host]():
                rows += linear_cells(zen, name, n, k, ms, args, gen, host)
    if not args.skip_moe:
        for name, shape in (QUICK_MOE if args.quick else MOE).items():
            for host in hosts:
                with HOST_MODES[host]():
                    rows += moe_rows(zen, name, shape, tokens, args, gen,
                                     host)
    print(table(rows, zen_why), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"zentorch": zen_why or "ok", "rows": rows}, f,
                      indent=1)
    return rows


if __name__ == "__main__":
    main()
