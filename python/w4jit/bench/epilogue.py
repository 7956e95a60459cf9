"""Fused epilogues: what they save and what they cost.

1. llama3-8b gate_up (28672 x 4096, s4 g128, bf16): the plain linear
   followed by the torch composition F.silu(t[:, :I]) * t[:, I:] (what a
   host does today) versus the fused silu_mul epilogue, for W4A16
   (torch.ops.w4jit.woq_linear vs woq_linear_silu_mul) and DA8W4
   (w4jit.Linear plain vs epilogue="silu_mul"), at M = 1, 16, 256.
2. The cost of an epilogue over the plain layer (o_proj 4096 x 4096): the
   same op with gelu_tanh, and with a residual add (operand read), at
   M = 1 and 256; the two variants of a pair are timed alternately.

Run: PYTHONPATH=build/release/python /usr/bin/python3 -m w4jit.bench.epilogue
"""
import argparse
import sys

import torch
import torch.nn.functional as F

import w4jit
from w4jit.bench.layers import bench_header, make_layer
from w4jit.bench.timing import min_p50, time_interleaved, timeit

OPS = torch.ops.w4jit


def time_pair(fa, fb, min_time, min_reps=3):
    """((min, p50) of fa, (min, p50) of fb) in seconds, timed alternately
    (timing.time_interleaved) for at least 2 * min_time."""
    t = time_interleaved({"a": fa, "b": fb}, 2 * min_time, min_reps)
    return min_p50(t["a"]), min_p50(t["b"])


def us(t):
    return f"{t[0] * 1e6:.0f}/{t[1] * 1e6:.0f}"


def bench_gate_up(args, rows):
    n, k = 28672, 4096
    inter = n // 2
    q, scales, _, repacked = make_layer(n, k, args.group_size)
    packed = repacked.t()
    lin_plain = {
        mode: w4jit.Linear.from_unpacked(q, scales, None, None, mode=mode,
                                         dtype=torch.bfloat16)
        for mode in ("w4a16", "da8w4")}
    lin_fused = {
        mode: w4jit.Linear.from_unpacked(q, scales, None, None, mode=mode,
                                         dtype=torch.bfloat16,
                                         epilogue="silu_mul")
        for mode in ("w4a16", "da8w4")}
    for m in args.m:
        x = torch.randn(m, k).bfloat16()

        def woq_unfused():
            t = OPS.woq_linear(x, packed, scales, None, None)
            return F.silu(t[:, :inter]) * t[:, inter:]

        def woq_fused():
            return OPS.woq_linear_silu_mul(x, packed, scales, None, None)

        # The composition alone, on a linear's result: what fusing saves.
        t_full = OPS.woq_linear(x, packed, scales, None, None)
        alone = timeit(lambda: F.silu(t_full[:, :inter]) * t_full[:, inter:],
                       args.min_time / 4)
        a, b = time_pair(woq_unfused, woq_fused, args.min_time)
        rows.append(("gate_up silu*mul", "w4a16 ops", m, a, b, alone))
        print(f"  w4a16 M={m}: {us(a)} vs {us(b)}", file=sys.stderr)

        def dq_unfused():
            t = lin_plain["da8w4"](x)
            return F.silu(t[:, :inter]) * t[:, inter:]

        a, b = time_pair(dq_unfused, lambda: lin_fused["da8w4"](x),
                         args.min_time)
        rows.append(("gate_up silu*mul", "da8w4 Linear", m, a, b, alone))
        print(f"  da8w4 M={m}: {us(a)} vs {us(b)}", file=sys.stderr)


def bench_overhead(args, rows):
    n, k = 4096, 4096
    q, scales, _, repacked = make_layer(n, k, args.group_size)
    packed = repacked.t()
    plain = w4jit.Linear.from_unpacked(q, scales, None, None, mode="da8w4",
                                       dtype=torch.bfloat16)
    variants = {
        e: w4jit.Linear.from_unpacked(q, scales, None, None, mode="da8w4",
                                      dtype=torch.bfloat16, epilogue=e)
        for e in ("gelu_tanh", "none+add")}
    for m in args.overhead_m:
        x = torch.randn(m, k).bfloat16()
        r = torch.randn(m, n).bfloat16()
        out = torch.empty(m, n, dtype=torch.bfloat16)
        pairs = [
            # The noise floor: the plain layer against itself.
            ("da8w4 Linear", "none (control)", lambda: plain(x),
             lambda: plain(x)),
            ("w4a16 ops", "gelu_tanh",
             lambda: OPS.woq_linear.out(x, packed, scales, None, None,
                                        out=out),
             lambda: OPS.woq_linear_gelu_tanh.out(x, packed, scales, None,
                                                  None, out=out)),
            ("w4a16 ops", "add (residual)",
             lambda: OPS.woq_linear.out(x, packed, scales, None, None,
                                        out=out),
             lambda: OPS.woq_linear_add.out(x, packed, scales, None, r,
                                            out=out)),
            ("da8w4 Linear", "gelu_tanh", lambda: plain(x),
             lambda: variants["gelu_tanh"](x)),
            ("da8w4 Linear", "add (residual)", lambda: plain(x),
             lambda: variants["none+add"](x, r)),
        ]
        for path, ep, fa, fb in pairs:
            a, b = time_pair(fa, fb, args.min_time)
            rows.append((f"o_proj {ep}", path, m, a, b, None))
            print(f"  {path} {ep} M={m}: {us(a)} vs {us(b)}", file=sys.stderr)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m w4jit.bench.epilogue",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--m", default="1,16,256")
    p.add_argument("--overhead-m", default="1,256")
    p.add_argument("--group-size", type=int, default=128)
    p.add_argument("--min-time", type=float, default=1.0)
    args = p.parse_args(argv)
    args.m = [int(s) for s in args.m.split(",") if s]
    args.overhead_m = [int(s) for s in args.overhead_m.split(",") if s]
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    header = bench_header("w4jit fused-epilogue benchmark", args.group_size,
                          "bf16 activations, scales and output")
    print(header, file=sys.stderr, flush=True)
    rows = []
    bench_gate_up(args, rows)
    bench_overhead(args, rows)
    print(header)
    print("\nµs min/p50. gate_up: linear + torch silu*mul vs fused, ratio "
          "= unfused / fused (min, p50); 'composition' is the torch "
          "silu*mul alone. o_proj: plain layer vs the same with the "
          "epilogue, ratio = fused / plain - 1 (min, p50)\n")
    print("| layer | path | M | unfused or plain | fused | ratio min, p50 |"
          " composition |")
    print("|---|---|---|---|---|---|---|")
    for layer, path, m, a, b, alone in rows:
        if layer.startswith("gate_up"):
            ratio = f"{a[0] / b[0]:.2f}x, {a[1] / b[1]:.2f}x"
        else:
            ratio = (f"{(b[0] / a[0] - 1) * 100:+.1f}%, "
                     f"{(b[1] / a[1] - 1) * 100:+.1f}%")
        comp = us(alone) if alone else ""
        print(f"| {layer} | {path} | {m} | {us(a)} | {us(b)} | {ratio} |"
              f" {comp} |")


if __name__ == "__main__":
    main()
