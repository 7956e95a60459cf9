"""Benchmark of the fused int4 MoE layer against what a host writes today.

    python3 -m w4jit.bench.moe [--presets qwen3-30b-a3b,gpt-oss-20b]
        [--tokens 1,4,16,64,256] [--modes w4a16,da8w4] [--threads 2]
        [--reps 10] [--budget 5] [--csv moe_torch.csv]

For each model preset (its MoE layer's H, I, E and top-k; gpt-oss's with
biases and the swigluoai gate on interleaved w13 rows), with random s4
experts (the preset's group, 128 or gpt-oss's 32; bf16 scales, bf16 x and
y), uniform routing (k
distinct random experts per token) and skewed routing (expert 0 in every
token), at each token count T, times interleaved:

  fused  w4jit.MoE: one MoeLayer call (torch.ops.w4jit.fused_moe runs the
         same layer);
  loop   the Python loop a host writes without it: for each expert some
         token chose, its rows gathered, torch.ops.w4jit.woq_linear_silu_mul
         (w13) and woq_linear (w2) for W4A16 (swigluoai: woq_linear, the
         gate in torch, woq_linear), dynamic_qlinear + the gate in torch +
         dynamic_qlinear for DA8W4, the rows scaled by their routing
         weights and index_add'ed into y;
  bf16   the same loop with torch's F.linear on the experts' bf16
         dequantized weights (mode-independent).

The three outputs are compared before timing (relative L2 difference of
loop and fused, and of each against bf16 dense; a configuration that
disagrees stops the run). Each path reads its own copy of the weights and
runs after the others' calls, so its experts are mostly not in the L3 (as
in a model, whose other layers run in between). Prints min and median us
per call and the time
ratios fused/loop and fused/bf16 (below 1: fused is faster), and writes
the rows as CSV with --csv. mixtral-8x7b's experts are ~0.7 GB of int4
per mode plus 2.8 GB of bf16, gpt-oss-120b's 1.6 GB plus 6.4 GB: choose
them explicitly.
"""
import argparse
import os
import statistics
import sys

import torch
import torch.nn.functional as F

import w4jit
from w4jit import formats
from w4jit.bench import presets, timing
from w4jit.bench.layers import bench_header

OPS = torch.ops.w4jit
PRESETS = {  # name: (H, I, E, top-k) of the model's MoE layer
    **presets.moe_layers(),
    "tiny": (256, 128, 8, 2),  # for tests
    "tiny-oai": (256, 128, 8, 2),  # for tests
}
# name: (gate, default group size, biases); others: ("silu", 128, False).
PRESET_GATES = {
    **presets.moe_gates(),
    "tiny-oai": ("swigluoai", 32, True),
}


def preset_gate(name):
    """(activation, default group size, biases) of a preset."""
    return PRESET_GATES.get(name, ("silu", 128, False))


def gate(act, g, inter):
    """The intermediate of w13's output g [rows, 2I]: silu(gate) * up on
    halves, or swigluoai on interleaved rows (gpt-oss's constants)."""
    if act == "swigluoai":
        gt = g[:, 0::2].clamp(max=7.0)
        up = g[:, 1::2].clamp(min=-7.0, max=7.0)
        return gt * torch.sigmoid(1.702 * gt) * (up + 1)
    return F.silu(g[:, :inter]) * g[:, inter:]
# Largest relative L2 difference allowed between two paths, per mode: the
# bf16 rounding of weights and intermediates (W4A16), plus the int8
# quantization of x and of the intermediate (DA8W4).
TOLERANCE = {"w4a16": 0.02, "da8w4": 0.1}
CSV_COLUMNS = ["preset", "mode", "routing", "tokens", "threads", "rounds",
               "fused_min_us", "fused_p50_us", "loop_min_us", "loop_p50_us",
               "bf16_min_us", "bf16_p50_us", "fused_over_loop_min",
               "fused_over_loop_p50", "fused_over_bf16_min",
               "fused_over_bf16_p50", "loop_rel_diff", "bf16_rel_diff"]


def random_words(shape):
    """Random int32 words: 8 random s4 values each (woq_repack_weight's
    layout)."""
    w = torch.randint(0, 2**32, shape, dtype=torch.int64)
    return (w - ((w >> 31) << 32)).to(torch.int32)


def dequant_bf16(words, scales_gn, group_size, rows=1024):
    """bf16 [N, K] weights q * s of int32 [N, K/8] words and scales [G, N],
    a block of rows at a time (the int64 nibbles of a whole expert of
    mixtral would take a GB)."""
    n, k = words.shape[0], words.shape[1] * 8
    out = torch.empty(n, k, dtype=torch.bfloat16)
    for r in range(0, n, rows):
        q = formats.unpack_int32(words[r:r + rows]).float()
        s = scales_gn[:, r:r + rows].float().t()
        out[r:r + rows] = (q.reshape(q.shape[0], -1, group_size) *
                           s.unsqueeze(-1)).reshape(q.shape).bfloat16()
    return out


class Experts:
    """A preset's random experts as every path needs them."""

    def __init__(self, preset, group_size, modes):
        h, i, e, self.k = PRESETS[preset]
        self.h, self.i, self.e = h, i, e
        self.act, default_group, biases = preset_gate(preset)
        group_size = group_size or default_group
        self.b13 = (torch.randn(e, 2 * i) * 0.1).bfloat16() if biases else None
        self.b2 = (torch.randn(e, h) * 0.1).bfloat16() if biases else None
        self.w13 = torch.stack([random_words((2 * i, h // 8))
                                for _ in range(e)])
        self.w2 = torch.stack([random_words((h, i // 8)) for _ in range(e)])

        def scales(g, n):
            return (torch.rand(e, g, n) * 0.02 + 0.001).bfloat16()

        self.s13 = scales(h // group_size, 2 * i)
        self.s2 = scales(i // group_size, h)
        self.fused = {m: w4jit.MoE.from_zentorch(
            self.w13, self.s13, self.w2, self.s2, mode=m,
            activation=self.act, w13_bias=self.b13, w2_bias=self.b2)
            for m in modes}
        self.dense13 = [dequant_bf16(self.w13[x], self.s13[x], group_size)
                        for x in range(e)]
        self.dense2 = [dequant_bf16(self.w2[x], self.s2[x], group_size)
                       for x in range(e)]

    def loop(self, x, ids, weights, expert_fn):
        """The host's loop: expert_fn(e, rows of x) -> their outputs."""
        k = ids.shape[1]
        flat = ids.flatten().long()
        order = torch.argsort(flat)
        counts = torch.bincount(flat, minlength=self.e).tolist()
        tokens = order // k
        w = weights.flatten()[order].unsqueeze(1)
        y = torch.zeros(x.shape[0], self.h)
        start = 0
        for e, c in enumerate(counts):
            if c == 0:
                continue
            rows = tokens[start:start + c]
            o = expert_fn(e, x.index_select(0, rows))
            y.index_add_(0, rows, o.float() * w[start:start + c])
            start += c
        return y.to(x.dtype)

    def _bias(self, b, e):
        return None if b is None else b[e]

    def w4a16_expert(self, e, xe):
        b13, b2 = self._bias(self.b13, e), self._bias(self.b2, e)
        if self.act == "silu" and b13 is None:
            h = OPS.woq_linear_silu_mul(xe, self.w13[e].t(), self.s13[e], None)
        else:
            g = OPS.woq_linear(xe, self.w13[e].t(), self.s13[e], None, b13)
            h = gate(self.act, g, self.i)
        return OPS.woq_linear(h, self.w2[e].t(), self.s2[e], None, b2)

    def da8w4_expert(self, e, xe):
        g = OPS.dynamic_qlinear(xe, self.w13[e].view(torch.int8),
                                self.s13[e], self._bias(self.b13, e))
        h = gate(self.act, g, self.i)
        return OPS.dynamic_qlinear(h, self.w2[e].view(torch.int8),
                                   self.s2[e], self._bias(self.b2, e))

    def bf16_expert(self, e, xe):
        g = F.linear(xe, self.dense13[e], self._bias(self.b13, e))
        h = gate(self.act, g, self.i)
        return F.linear(h, self.dense2[e], self._bias(self.b2, e))

    def paths(self, mode, x, ids, weights):
        """name -> a call computing y for this input."""
        expert = self.w4a16_expert if mode == "w4a16" else self.da8w4_expert
        fused = self.fused[mode]
        return {
            "fused": lambda: fused(x, ids, weights),
            "loop": lambda: self.loop(x, ids, weights, expert),
            "bf16": lambda: self.loop(x, ids, weights, self.bf16_expert),
        }


def routing(t, k, e, skewed):
    """(topk_ids int32 [t, k], topk_weights f32 [t, k] summing to 1)."""
    if skewed:
        rest = torch.rand(t, e - 1).argsort(dim=1)[:, :k - 1] + 1
        ids = torch.cat([torch.zeros(t, 1, dtype=torch.int64), rest], dim=1)
    else:
        ids = torch.rand(t, e).argsort(dim=1)[:, :k]
    weights = torch.rand(t, k) + 0.1
    return ids.int(), weights / weights.sum(dim=1, keepdim=True)


def rel_diff(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp(min=1e-30)).item()


def time_interleaved(calls, reps, budget_s):
    """{name: [seconds]}: `reps` rounds, each calling every path once in a
    rotating order, after one warm-up round; fewer rounds (at least 3)
    when the configuration has used up budget_s."""
    return timing.time_interleaved(calls, min_reps=reps, max_reps=reps,
                                   budget_s=budget_s, rotate=True)


def bench_preset(preset, args, say):
    h, inter, e, k = PRESETS[preset]
    act, group, biases = preset_gate(preset)
    say(f"{preset}: H {h}, I {inter}, E {e}, k {k}, group "
        f"{args.group_size or group}, {act}{', biases' if biases else ''}: "
        "building the experts...")
    ex = Experts(preset, args.group_size, args.modes)
    rows = []
    for skewed in (False, True):
        for t in args.tokens:
            x = torch.randn(t, h).bfloat16()
            ids, weights = routing(t, k, e, skewed)
            for mode in args.modes:
                calls = ex.paths(mode, x, ids, weights)
                out = {n: f() for n, f in calls.items()}
                diffs = (rel_diff(out["loop"], out["fused"]),
                         rel_diff(out["fused"], out["bf16"]))
                where = (f"{preset} {mode} "
                         f"{'skewed' if skewed else 'uniform'} T={t}")
                if max(diffs) > TOLERANCE[mode]:
                    raise RuntimeError(
                        f"{where}: outputs disagree (relative L2 difference "
                        f"loop/fused {diffs[0]:.3g}, fused/bf16 "
                        f"{diffs[1]:.3g}; tolerance {TOLERANCE[mode]})")
                times = time_interleaved(calls, args.reps, args.budget)
                row = {"preset": preset, "mode": mode,
                       "routing": "skewed" if skewed else "uniform",
                       "tokens": t, "threads": torch.get_num_threads(),
                       "rounds": len(times["fused"]),
                       "loop_rel_diff": diffs[0], "bf16_rel_diff": diffs[1]}
                for n, ts in times.items():
                    row[f"{n}_min_us"] = min(ts) * 1e6
                    row[f"{n}_p50_us"] = statistics.median(ts) * 1e6
                for other in ("loop", "bf16"):
                    for stat in ("min", "p50"):
                        row[f"fused_over_{other}_{stat}"] = (
                            row[f"fused_{stat}_us"] / row[f"{other}_{stat}_us"])
                say(f"  {where}: fused {row['fused_min_us']:.0f} us min, "
                    f"loop {row['loop_min_us']:.0f}, "
                    f"bf16 {row['bf16_min_us']:.0f}")
                rows.append(row)
    return rows


def table(rows):
    head = ("| preset | mode | routing | T | fused min / p50 (us) | "
            "loop min / p50 | bf16 min / p50 | fused/loop min, p50 | "
            "fused/bf16 min, p50 |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        lines.append(
            f"| {r['preset']} | {r['mode']} | {r['routing']} | {r['tokens']}"
            f" | {r['fused_min_us']:.0f} / {r['fused_p50_us']:.0f}"
            f" | {r['loop_min_us']:.0f} / {r['loop_p50_us']:.0f}"
            f" | {r['bf16_min_us']:.0f} / {r['bf16_p50_us']:.0f}"
            f" | {r['fused_over_loop_min']:.2f}, "
            f"{r['fused_over_loop_p50']:.2f}"
            f" | {r['fused_over_bf16_min']:.2f}, "
            f"{r['fused_over_bf16_p50']:.2f} |")
    return "\n".join(lines)


def csv_text(rows):
    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)
    lines = [",".join(CSV_COLUMNS)]
    lines += [",".join(cell(r[c]) for c in CSV_COLUMNS) for r in rows]
    return "\n".join(lines) + "\n"


def _list(kind, parse, choices=None):
    def convert(text):
        items = [parse(v) for v in text.split(",") if v]
        bad = [v for v in items if choices is not None and v not in choices]
        if not items or bad:
            raise argparse.ArgumentTypeError(
                f"{kind} {text!r}: "
                + (f"{bad[0]!r} is not one of {', '.join(choices)}" if bad
                   else "empty"))
        return items
    return convert


def positive_ints(text):
    items = _list("tokens", int)(text)
    if min(items) < 1:
        raise argparse.ArgumentTypeError(f"tokens {text!r}: each must be >= 1")
    return items


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m w4jit.bench.moe",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--presets", type=_list("presets", str, list(PRESETS)),
                   default=["qwen3-30b-a3b"],
                   help="models, e.g. qwen3-30b-a3b,mixtral-8x7b (default "
                   "qwen3-30b-a3b)")
    p.add_argument("--tokens", type=positive_ints,
                   default=[1, 4, 16, 64, 256], help="token counts T")
    p.add_argument("--modes", type=_list("modes", str, ["w4a16", "da8w4"]),
                   default=["w4a16", "da8w4"])
    p.add_argument("--threads", type=int, default=None,
                   help="torch.set_num_threads (default: every CPU)")
    p.add_argument("--reps", type=int, default=10,
                   help="interleaved rounds per configuration")
    p.add_argument("--budget", type=float, default=5.0,
                   help="seconds per configuration after which no more "
                   "rounds start (at least 3 are timed)")
    p.add_argument("--group-size", type=int, default=None,
                   help="group size of every preset (default: the preset's,"
                   " 128 or gpt-oss's 32)")
    p.add_argument("--csv", help="also write the rows as CSV to this file")
    p.add_argument("--host-mode", choices=("inference", "no_grad"),
                   default="inference",
                   help="the mode the tensors are made and timed in "
                   "(default inference: torch.inference_mode(), as a "
                   "serving host runs)")
    args = p.parse_args(argv)
    if args.reps < 1:
        p.error(f"--reps {args.reps} must be >= 1")
    for name in args.presets:
        h, inter, _, _ = PRESETS[name]
        g = args.group_size or preset_gate(name)[1]
        if g < 1 or h % g or inter % g:
            p.error(f"--group-size {g} must divide {name}'s "
                    f"H = {h} and I = {inter}")
    if args.threads is not None and args.threads < 1:
        p.error(f"--threads {args.threads} must be >= 1")
    torch.set_num_threads(args.threads or len(os.sched_getaffinity(0)))

    def say(line):
        print(line, file=sys.stderr, flush=True)

    # Each path has its own weights (the fused layer's packed experts, the
    # per-expert ops' packed layers, bf16 copies) and runs after the others
    # in the rotation, so it mostly finds its experts evicted from the L3.
    groups = args.group_size or "/".join(
        sorted({str(preset_gate(n)[1]) for n in args.presets}))
    header = bench_header("w4jit MoE: fused vs per-expert loop vs bf16",
                          groups, "bf16 x, y and scales",
                          "weights mostly from DRAM (each path's own copy, "
                          "evicted by the other paths' calls between its "
                          "calls)")
    rows = []
    # The host's mode: every tensor made and every call made inside it (the
    # ops find their layers by storage identity in either mode, with no
    # per-call read of the weights).
    mode = torch.inference_mode if args.host_mode == "inference" \
        else torch.no_grad
    with mode():
        for name in args.presets:
            rows += bench_preset(name, args, say)
    print(header)
    print(table(rows))
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(csv_text(rows))
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
