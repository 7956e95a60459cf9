"""w4jit's linear layers against vLLM's own CPU int4 kernels, layer by
layer, in vLLM's CPU venv (scripts/vllm-venv.sh --with-w4jit):

    python3 -m w4jit.bench.vllm_layers [--threads 2] [--m 16,64,256,512]
                                      [--layers qkv,o_proj | --shape N,K ...]
                                      [--modes w4a16,w4a8]

vLLM's side is its own kernel class, CPUWNA16LinearKernel (the one vLLM
picks for compressed-tensors W4A16 on CPUs), given a compressed-tensors
layer and run as vLLM runs it: process_weights_after_loading, then
apply_weights. W4A16 is its cpu_gemm_wna16 (isa "amx" where the CPU has
AMX tiles, "vec" elsewhere); W4A8 (VLLM_CPU_INT4_W4A8=1) its
int4_scaled_mm_cpu, which vLLM takes only on AMX CPUs, so that mode is
refused elsewhere rather than timed under a name it does not run. w4jit's
side is w4jit.Linear on the same checkpoint tensors, W4A16 against W4A16
and DA8W4 against W4A8. Weights s4 (uint4b8), group 128, bf16 scales and
activations, hot. The two kernels of a row are called in turn (interleaved
rounds), so the ratio is the figure to read (performance.md); min and p50
of each.
"""
import argparse
import datetime
import os
import sys

import torch

import w4jit
from w4jit.bench import presets
from w4jit.bench.layers import cpu_name
from w4jit.bench.timing import min_p50, time_interleaved

# w4jit's mode beside the vLLM mode it is compared with.
W4JIT_MODE = {"w4a16": "w4a16", "w4a8": "da8w4"}


def checkpoint(n, k, group_size, gen):
    """compressed-tensors pack_quantized tensors of a random s4 layer:
    weight_packed int32 [N, K/8] (uint4b8: q + 8, nibble i of a word is
    input channel 8j + i) and weight_scale bf16 [N, K / group_size]."""
    q = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=gen)
    shifts = torch.arange(0, 32, 4, dtype=torch.int32)
    packed = (q.view(n, k // 8, 8) << shifts).sum(-1, dtype=torch.int64)
    packed = packed.to(torch.int32)  # wraps the top nibble as the format does
    scales = (torch.rand(n, k // group_size, generator=gen) * 0.02 +
              0.001).to(torch.bfloat16)
    return packed, scales


def vllm_layer(mode, packed, scales, group_size):
    """(vLLM's kernel object, its layer module) for one mode, the weights
    processed by vLLM's own process_weights_after_loading."""
    from vllm.model_executor.kernels.linear.mixed_precision.cpu import (
        CPUWNA16LinearKernel)
    from vllm.model_executor.kernels.linear.mixed_precision.MPLinearKernel \
        import MPLinearLayerConfig
    from vllm.scalar_type import scalar_types

    n, k = packed.shape[0], packed.shape[1] * 8
    config = MPLinearLayerConfig(
        full_weight_shape=(k, n), partition_weight_shape=(k, n),
        weight_type=scalar_types.uint4b8, act_type=torch.bfloat16,
        group_size=group_size, zero_points=False)
    kernel = CPUWNA16LinearKernel(config, "weight_packed", "weight_scale",
                                  "weight_zero_point")
    layer = torch.nn.Module()
    w = torch.nn.Parameter(packed.clone(), requires_grad=False)
    w.input_dim, w.output_dim, w.packed_dim = 1, 0, 1
    s = torch.nn.Parameter(scales.clone(), requires_grad=False)
    s.input_dim, s.output_dim = 1, 0
    layer.register_parameter("weight_packed", w)
    layer.register_parameter("weight_scale", s)
    layer.register_parameter("weight_zero_point", None)
    layer.bias = None
    # vLLM reads its mode from the environment while it processes the
    # weights; the caller's environment (and its child processes') keeps
    # its own value.
    before = os.environ.get("VLLM_CPU_INT4_W4A8")
    os.environ["VLLM_CPU_INT4_W4A8"] = "1" if mode == "w4a8" else "0"
    try:
        kernel.process_weights_after_loading(layer)
    finally:
        if before is None:
            del os.environ["VLLM_CPU_INT4_W4A8"]
        else:
            os.environ["VLLM_CPU_INT4_W4A8"] = before
    if layer.use_w4a8 != (mode == "w4a8"):
        raise RuntimeError(f"vLLM took use_w4a8={layer.use_w4a8} for {mode}")
    return kernel, layer


def vllm_int4_refusal():
    """None where vLLM's op library for this CPU has its int4 GEMM, else
    why not (its library for CPUs without AVX-512 leaves it out)."""
    from vllm.platforms import current_platform
    from w4jit.vllm._common import vllm_int4_gemm_missing
    current_platform.import_kernels()
    missing = vllm_int4_gemm_missing()
    if missing is None:
        return None
    return f"{missing}: there is nothing to compare w4jit with"


def vllm_w4a8_refusal():
    """None where vLLM runs its W4A8 kernel, else why not."""
    if torch.cpu._is_amx_tile_supported():
        return None
    return "vLLM runs W4A8 only on CPUs with AMX tiles"


def bench(args):
    gen = torch.Generator().manual_seed(0)
    rows = []
    for name, (n, k) in args.shapes:
        packed, scales = checkpoint(n, k, args.group_size, gen)
        for mode in args.modes:
            kernel, layer = vllm_layer(mode, packed, scales, args.group_size)
            ours = w4jit.Linear.from_compressed_tensors(
                packed, scales, mode=W4JIT_MODE[mode], dtype=torch.bfloat16,
                numerics=args.numerics if mode == "w4a16" else None)
            for m in args.m:
                x = torch.randn(m, k, generator=gen).to(torch.bfloat16)
                with torch.inference_mode():
                    ref = kernel.apply_weights(layer, x).float()
                    got = ours(x).float()
                rel = ((got - ref).norm() / ref.norm()).item()
                times = time_interleaved(
                    {"vllm": lambda: kernel.apply_weights(layer, x),
                     "w4jit": lambda: ours(x)},
                    min_time=args.seconds, min_reps=5, rotate=True)
                v_min, v_p50 = min_p50(times["vllm"])
                w_min, w_p50 = min_p50(times["w4jit"])
                rows.append((name, n, k, mode, m, v_min, v_p50, w_min, w_p50,
                             rel, ",".join(ours.kernel_names())))
                print_row(rows[-1])
            del kernel, layer, ours
    return rows


HEADER = ("layer", "N", "K", "mode", "M", "vllm_min_ms", "vllm_p50_ms",
          "w4jit_min_ms", "w4jit_p50_ms", "speedup_min", "speedup_p50",
          "rel_diff")


def print_row(row):
    name, n, k, mode, m, v_min, v_p50, w_min, w_p50, rel, _ = row
    print(f"| {name} | {n} | {k} | {mode} | {m} | {v_min * 1e3:.3f} | "
          f"{v_p50 * 1e3:.3f} | {w_min * 1e3:.3f} | {w_p50 * 1e3:.3f} | "
          f"{v_min / w_min:.2f}x | {v_p50 / w_p50:.2f}x | {rel:.1e} |",
          flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--m", default="16,64,256,512",
                   help="activation rows, comma-separated")
    p.add_argument("--model", default="llama3-8b",
                   help="a dense model of presets.json")
    p.add_argument("--layers", default=None,
                   help="comma-separated layer names (default: all)")
    p.add_argument("--shape", action="append", default=[],
                   help="N,K of a layer instead of the model's "
                        "(repeatable)")
    p.add_argument("--modes", default="w4a16,w4a8",
                   help="vLLM modes: w4a16 (against w4jit W4A16), "
                        "w4a8 (against w4jit DA8W4)")
    p.add_argument("--group-size", type=int, default=128)
    p.add_argument("--numerics", default="exact",
                   choices=("exact", "zentorch"),
                   help="w4jit W4A16's: exact (its default: the scales "
                        "applied to f32 sums per group) or zentorch (each "
                        "dequantized weight rounded to bf16, as vLLM's "
                        "own kernel computes)")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="minimum time per row (both kernels)")
    args = p.parse_args(argv)
    args.m = [int(v) for v in args.m.split(",")]
    layers = presets.dense_layers(args.model)
    if args.shape:
        try:
            args.shapes = [(v, tuple(int(d) for d in v.split(",")))
                           for v in args.shape]
        except ValueError:
            p.error(f"--shape: {args.shape} is not N,K")
        if any(len(nk) != 2 for _, nk in args.shapes):
            p.error(f"--shape: {args.shape} is not N,K")
    else:
        names = args.layers.split(",") if args.layers else list(layers)
        unknown = [nm for nm in names if nm not in layers]
        if unknown:
            p.error(f"--layers: {unknown[0]!r} is not a layer of "
                    f"{args.model} ({', '.join(layers)})")
        args.shapes = [(nm, layers[nm]) for nm in names]
    args.modes = args.modes.split(",")
    bad = [m for m in args.modes if m not in W4JIT_MODE]
    if bad:
        p.error(f"--modes: unknown mode {bad[0]!r} (w4a16 or w4a8)")
    refusal = vllm_int4_refusal()
    if refusal:
        p.exit(1, f"vllm_layers: {refusal}\n")
    refusal = vllm_w4a8_refusal() if "w4a8" in args.modes else None
    if refusal:
        print(f"w4a8 not timed: {refusal}", file=sys.stderr)
        args.modes.remove("w4a8")
    torch.set_num_threads(args.threads)
    print(f"w4jit against vLLM's CPUWNA16LinearKernel, "
          f"{datetime.datetime.utcnow().strftime('%Y-%m-%dT%H:%MZ')}, "
          f"{cpu_name()}, {os.cpu_count()} CPUs, torch {torch.__version__}, "
          f"{args.threads} threads, s4 g{args.group_size}, bf16, hot weights, "
          f"w4jit W4A16 numerics {args.numerics}")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    return bench(args)


if __name__ == "__main__":
    main()
