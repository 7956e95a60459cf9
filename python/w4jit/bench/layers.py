"""Benchmark of the torch ops against torch's own bf16 linear.

    python3 -m w4jit.bench.layers [--threads 2] [--m 1,16,256] [--quick]
                                 [--csv out.csv]

Times, at one thread count (torch.set_num_threads), on the llama3-8b
layers: torch.nn.functional.linear with bf16 weights (torch's oneDNN path),
torch.ops.w4jit.woq_linear (W4A16) and dynamic_qlinear (DA8W4) called as
vLLM's zentorch kernel class calls them, and the custom class
torch.classes.w4jit.Linear in both modes. Weights are s4, group 128, bf16
scales, bf16 activations, hot (reused across calls). Prints a table and
CSV (min and p50 per cell, speedup = F.linear p50 / p50).

Then the per-call overhead of each op over Layer::Run on the same layer,
measured in C++ (torch.ops.w4jit._overhead_probe: alternating Layer::Run
and the op through the dispatcher), against the budget 5 us + 3%, and the
extra cost of calling the op from Python.
"""
import argparse
import datetime
import os
import platform
import resource
import sys

import torch
import torch.nn.functional as F

import w4jit
from w4jit.bench import presets
from w4jit.bench.timing import timeit

LAYERS = presets.dense_layers("llama3-8b")  # name: (N, K)
OVERHEAD_SHAPES = {"tiny": (256, 256)}


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def bench_header(title, group_size, dtypes, weights="hot weights"):
    """The first line of a benchmark's output: what, when (UTC), where
    (CPU, CPU count, torch version, intra-op threads), the layer type and
    where the weights are read from."""
    return (f"{title}, "
            f"{datetime.datetime.utcnow().strftime('%Y-%m-%dT%H:%MZ')}, "
            f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__}"
            f", {torch.get_num_threads()} threads, s4 g{group_size}, "
            f"{dtypes}, {weights}")


def make_layer(n, k, group_size):
    g = k // group_size
    q = torch.randint(-8, 8, (n, k), dtype=torch.int8)
    scales = (torch.rand(g, n) * 0.02 + 0.001).to(torch.bfloat16)
    dense = (q.float().reshape(n, g, group_size) *
             scales.float().t().unsqueeze(-1)).reshape(n, k).to(torch.bfloat16)
    repacked = torch.ops.w4jit.woq_repack_weight(q)
    return q, scales, dense, repacked


def bench_layers(args):
    rows = []
    for name in args.layers:
        n, k = LAYERS[name]
        _, scales, dense, repacked = make_layer(n, k, args.group_size)
        dense_f32 = dense.float()
        packed_w4a16 = repacked.t()                 # as the seed passes it
        packed_da8w4 = repacked.view(torch.int8)
        lin = {mode: w4jit.Linear.from_zentorch(repacked, scales, mode=mode)
               for mode in ("w4a16", "da8w4")}
        for m in args.m:
            x = torch.randn(m, k).to(torch.bfloat16)
            x32 = x.float()
            cells = {
                "F.linear_bf16": lambda: F.linear(x, dense),
                "F.linear_f32": lambda: F.linear(x32, dense_f32),
                "woq_linear": lambda: torch.ops.w4jit.woq_linear(
                    x, packed_w4a16, scales, None, None),
                "dynamic_qlinear": lambda: torch.ops.w4jit.dynamic_qlinear(
                    x, packed_da8w4, scales, None),
                "Linear_w4a16": lambda: lin["w4a16"](x),
                "Linear_da8w4": lambda: lin["da8w4"](x),
            }
            row = {"layer": name, "n": n, "k": k, "m": m}
            # Involuntary context switches while timing: a quiet machine
            # has few; many mean another process took our cores and the
            # p50s are not to be trusted.
            before = resource.getrusage(resource.RUSAGE_SELF).ru_nivcsw
            for key, fn in cells.items():
                row[key] = timeit(fn, args.min_time)
            row["nivcsw"] = (resource.getrusage(resource.RUSAGE_SELF)
                             .ru_nivcsw - before)
            rows.append(row)
            print(f"  {name} M={m} done ({row['nivcsw']} involuntary "
                  "context switches)", file=sys.stderr, flush=True)
        del dense, dense_f32, lin, repacked
    return rows


def bench_overhead(args):
    rows = []
    shapes = dict(OVERHEAD_SHAPES)
    shapes.update({n: LAYERS[n] for n in args.layers})
    if args.overhead_iters <= 0:
        return rows
    for name, (n, k) in shapes.items():
        _, scales, _, repacked = make_layer(n, k, min(args.group_size, k))
        x = torch.randn(1, k).to(torch.bfloat16)
        calls = {
            "woq_linear": (repacked.t(), None),
            "dynamic_qlinear": (repacked.view(torch.int8), None),
        }
        for op, (packed, zp) in calls.items():
            probe = torch.ops.w4jit._overhead_probe(
                op, x, packed, scales, zp, None, args.overhead_iters)
            run = probe[0].median().item() / 1e3   # us
            via_op = probe[1].median().item() / 1e3
            fn = getattr(torch.ops.w4jit, op)
            _, py_p50 = timeit(lambda: fn(x, packed, scales, None)
                               if op == "dynamic_qlinear"
                               else fn(x, packed, scales, None, None),
                               args.min_time / 2, min_reps=50)
            over = via_op - run
            budget = 5.0 + 0.03 * run
            rows.append({"shape": name, "n": n, "k": k, "op": op,
                         "run_us": run, "op_us": via_op, "overhead_us": over,
                         "budget_us": budget, "python_us": py_p50 * 1e6,
                         "ok": over <= budget})
    return rows


def us(t):
    return f"{t * 1e6:.0f}" if t * 1e6 >= 100 else f"{t * 1e6:.1f}"


def print_tables(rows, over, args, header):
    print(header)
    keys = ["woq_linear", "dynamic_qlinear", "Linear_w4a16", "Linear_da8w4"]
    print("\nµs min/p50; (×) = F.linear bf16 p50 / p50. F.linear f32 (dense"
          " f32 weights) is shown as a second, stronger peer.")
    print("\n| layer | M | F.linear bf16 | F.linear f32 | " +
          " | ".join(keys) + " |")
    print("|---|---|---|---|" + "---|" * len(keys))
    for r in rows:
        base = r["F.linear_bf16"]
        f32 = r["F.linear_f32"]
        cells = [f"{us(r[k][0])}/{us(r[k][1])} ({base[1] / r[k][1]:.2f}×)"
                 for k in keys]
        print(f"| {r['layer']} {r['n']}×{r['k']} | {r['m']} | "
              f"{us(base[0])}/{us(base[1])} | {us(f32[0])}/{us(f32[1])} | " +
              " | ".join(cells) + " |")
    if not over:
        return
    print("\nPer-call overhead at M=1 (p50 over "
          f"{args.overhead_iters} alternating calls; budget 5 µs + 3%):")
    print("\n| shape | op | Layer::Run µs | op µs | overhead µs | budget µs |"
          " within | op from Python µs |")
    print("|---|---|---|---|---|---|---|---|")
    for o in over:
        print(f"| {o['shape']} {o['n']}×{o['k']} | {o['op']} | "
              f"{o['run_us']:.1f} | {o['op_us']:.1f} | {o['overhead_us']:.1f} "
              f"| {o['budget_us']:.1f} | {'yes' if o['ok'] else 'NO'} | "
              f"{o['python_us']:.1f} |")


def csv_lines(rows, over):
    out = ["kind,layer,n,k,m,impl,min_us,p50_us,speedup_p50_vs_flinear_bf16"]
    for r in rows:
        base = r["F.linear_bf16"][1]
        for key in ("F.linear_bf16", "F.linear_f32", "woq_linear", "dynamic_qlinear",
                    "Linear_w4a16", "Linear_da8w4"):
            mn, p50 = r[key]
            out.append(f"time,{r['layer']},{r['n']},{r['k']},{r['m']},{key},"
                       f"{mn * 1e6:.2f},{p50 * 1e6:.2f},{base / p50:.3f}")
    out.append("kind,shape,n,k,m,op,layer_run_p50_us,op_p50_us,overhead_us,"
               "budget_us,python_call_p50_us")
    for o in over:
        out.append(f"overhead,{o['shape']},{o['n']},{o['k']},1,{o['op']},"
                   f"{o['run_us']:.2f},{o['op_us']:.2f},{o['overhead_us']:.2f},"
                   f"{o['budget_us']:.2f},{o['python_us']:.2f}")
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m w4jit.bench.layers",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=2,
                   help="torch.set_num_threads (default 2)")
    p.add_argument("--m", default="1,16,256", help="batch sizes, e.g. 1,16")
    p.add_argument("--layers", default=",".join(LAYERS),
                   help="subset of " + ",".join(LAYERS))
    p.add_argument("--group-size", type=int, default=128)
    p.add_argument("--min-time", type=float, default=0.5,
                   help="seconds of timed calls per cell (at least 3 calls)")
    p.add_argument("--overhead-iters", type=int, default=300)
    p.add_argument("--csv", help="also write the CSV to this file")
    p.add_argument("--host-mode", choices=("inference", "no_grad"),
                   default="inference",
                   help="the mode the tensors are made and timed in "
                   "(default inference: torch.inference_mode(), as a "
                   "serving host runs)")
    p.add_argument("--quick", action="store_true",
                   help="qkv and o_proj, M=1,16, short timings")
    args = p.parse_args(argv)
    if args.quick:
        args.layers, args.m, args.min_time = "qkv,o_proj", "1,16", 0.1
        args.overhead_iters = 100
    args.layers = [s for s in args.layers.split(",") if s]
    for name in args.layers:
        if name not in LAYERS:
            p.error(f"unknown layer {name!r}; choose from {', '.join(LAYERS)}")
    args.m = [int(s) for s in args.m.split(",") if s]
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    header = bench_header("w4jit torch benchmark", args.group_size,
                          "bf16 activations and scales")
    print(header, file=sys.stderr, flush=True)
    mode = torch.inference_mode if args.host_mode == "inference" \
        else torch.no_grad
    with mode():
        rows = bench_layers(args)
        over = bench_overhead(args)
    print_tables(rows, over, args, header)
    lines = csv_lines(rows, over)
    print("\nCSV:")
    print("\n".join(lines))
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
