"""End-to-end: vLLM offline generation on locally made int4 models, with
vLLM's own CPU int4 kernels, zentorch's and w4jit's (docs/vllm.md).

    python3 -m w4jit.vllm_bench --models DIR [--shape tiny|small|1b|moe]
        [--paths bf16,vllm-w4a16,...] [--rounds 1] [--repeats 3]
        [--batches 1,4,16] [--decode 64] [--prefill 512] [--threads N]
        [--compile] [--profile] [--json OUT]

DIR is made by w4jit.vllm_models when it has no model folders yet. Each path
runs in its own process (the plugin and the kernel choice are per process;
--rounds > 1 starts one per path per round, path order rotated each round),
times each shape --repeats times inside it, and reports: decode
tokens/s at each batch (B sequences of a 32-token prompt, `--decode` new
tokens each, timed against the same request with one new token, so prefill
cancels), the time of one `--prefill`-token prompt with one new token, the
first step's log-probabilities over the whole vocabulary (max |delta| and KL
against the bf16 model's) and 32 greedy tokens (against vLLM's own W4A16).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# path name -> (model variant, environment of its process)
PATHS = {
    "bf16": ("bf16", {"VLLM_PLUGINS": ""}),
    "vllm-w4a16": ("ct-w4a16-g128",
                   {"VLLM_PLUGINS": "", "VLLM_CPU_INT4_W4A8": "0"}),
    "vllm-w4a8": ("ct-w4a16-g128",
                  {"VLLM_PLUGINS": "", "VLLM_CPU_INT4_W4A8": "1"}),
    "zentorch-w4a16": ("ct-w4a16-g128",
                       {"VLLM_PLUGINS": "", "VLLM_CPU_INT4_W4A8": "0",
                        "W4JIT_BENCH_ZEN": "1"}),
    "zentorch-da8w4": ("ct-w4a16-g128",
                       {"VLLM_PLUGINS": "", "VLLM_CPU_INT4_W4A8": "1",
                        "W4JIT_BENCH_ZEN": "1"}),
    "w4jit-w4a16": ("ct-w4a16-g128",
                    {"VLLM_PLUGINS": "w4jit", "VLLM_CPU_INT4_W4A8": "0"}),
    "w4jit-da8w4": ("ct-w4a16-g128",
                    {"VLLM_PLUGINS": "w4jit", "VLLM_CPU_INT4_W4A8": "1"}),
}
GREEDY_STEPS = 32
PROMPT_LEN = 32


def _force_zen_platform():
    """vLLM takes its zentorch kernels only on a CPU whose /proc/cpuinfo
    says AuthenticAMD; elsewhere (this benchmark's Intel hosts, where
    zentorch's kernels run too) the platform check is answered yes."""
    import vllm.platforms as platforms
    platforms._is_amd_zen_cpu = lambda: True


def _prompt_ids(n, vocab, seed):
    import random
    rng = random.Random(seed)
    return [rng.randrange(2, vocab) for _ in range(n)]


def _timed(llm, prompts, params):
    t0 = time.perf_counter()
    out = llm.generate(prompts, params, use_tqdm=False)
    return time.perf_counter() - t0, out


def _child(args):
    """One path in this process: prints one JSON line."""
    if os.environ.get("W4JIT_BENCH_ZEN") == "1":
        _force_zen_platform()
    # vLLM's own AMX kernels (its int4 linear and attention) run tile
    # instructions without asking Linux for the tile state; on PyPI's torch
    # nothing else asks either, and the first one is SIGILL. The plugin asks
    # (w4jit/vllm/__init__.py); every other path gets the same here.
    import torch
    torch._C._cpu._init_amx()
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    llm = LLM(model=args.model, dtype="bfloat16", seed=0,
              max_model_len=max(1024, args.prefill + 64),
              max_num_seqs=max(args.batches), max_logprobs=-1,
              enforce_eager=not args.compile,
              enable_prefix_caching=False)
    vocab = llm.llm_engine.model_config.get_vocab_size()
    tok_vocab = min(vocab, len(llm.get_tokenizer()))
    result = {"path": args.path, "model": args.model}

    def prompts(b, n, seed):
        return [TokensPrompt(prompt_token_ids=_prompt_ids(n, tok_vocab,
                                                          seed + j))
                for j in range(b)]

    # Correctness: the first step over the whole vocabulary, then greedy.
    p = prompts(1, PROMPT_LEN, 1000)
    _, out = _timed(llm, p, SamplingParams(temperature=0, max_tokens=1,
                                           logprobs=-1))
    first = out[0].outputs[0].logprobs[0]
    lp = [0.0] * vocab
    for tok, v in first.items():
        lp[tok] = v.logprob
    import numpy as np
    np.save(args.logprobs_out, np.asarray(lp, dtype=np.float64))
    _, out = _timed(llm, p, SamplingParams(temperature=0,
                                           max_tokens=GREEDY_STEPS,
                                           logprobs=2, ignore_eos=True))
    o = out[0].outputs[0]
    result["greedy"] = list(o.token_ids)
    result["greedy_top2"] = [sorted((v.logprob for v in step.values()),
                                    reverse=True)[:2] for step in o.logprobs]

    # Speed: a short warm-up of every shape, then --repeats timings each.
    one = SamplingParams(temperature=0, max_tokens=1, ignore_eos=True)
    decode = {b: [] for b in args.batches}
    prefill = []
    pre = prompts(1, args.prefill, 7)
    for b in args.batches:
        _timed(llm, prompts(b, PROMPT_LEN, b),
               SamplingParams(temperature=0, max_tokens=4, ignore_eos=True))
    _timed(llm, pre, one)
    for _ in range(args.repeats):
        for b in args.batches:
            ps = prompts(b, PROMPT_LEN, b)
            full = SamplingParams(temperature=0, max_tokens=args.decode,
                                  ignore_eos=True)
            t_full, _ = _timed(llm, ps, full)
            t_one, _ = _timed(llm, ps, one)
            decode[b].append(b * (args.decode - 1) / max(t_full - t_one,
                                                         1e-9))
        prefill.append(_timed(llm, pre, one)[0])
    result["decode_tok_s"] = decode
    result["prefill_s"] = prefill
    if args.profile:
        result["profile"] = _profile(llm, prompts(1, PROMPT_LEN, 5))
    print("W4JIT_BENCH " + json.dumps(result), flush=True)


def _label_w4jit_calls():
    """torch's profiler does not see calls into a torchbind object; label
    the plugin's entry points (only in profiling runs: a label costs a few
    microseconds a call)."""
    import torch
    from .vllm import linear_kernel, moe_method  # noqa: F401 (installed)
    kernel = linear_kernel.W4jitWNA16LinearKernel
    apply = kernel.apply_weights

    def labelled(self, layer, x, bias=None):
        with torch.profiler.record_function("w4jit::linear"):
            return apply(self, layer, x, bias)
    kernel.apply_weights = labelled
    cls = moe_method.ct_moe.CompressedTensorsWNA16MoEMethod
    moe_apply = cls.apply

    def moe_labelled(self, *a, **kw):
        with torch.profiler.record_function("w4jit::moe"):
            return moe_apply(self, *a, **kw)
    cls.apply = moe_labelled


def _profile(llm, prompts):
    """Where a batch-1 decode step's time goes: CPU self time by op,
    grouped into w4jit, other int4 kernels, attention and the rest, beside
    the step's wall time (the difference is Python and scheduling)."""
    import torch
    from vllm import SamplingParams
    if os.environ.get("VLLM_PLUGINS") == "w4jit":
        _label_w4jit_calls()
    steps = 17
    params = SamplingParams(temperature=0, max_tokens=steps, ignore_eos=True)
    llm.generate(prompts, params, use_tqdm=False)
    t0 = time.perf_counter()
    with torch.profiler.profile(activities=[
            torch.profiler.ProfilerActivity.CPU]) as prof:
        llm.generate(prompts, params, use_tqdm=False)
    wall_ms = (time.perf_counter() - t0) * 1000 / steps
    groups = {"w4jit": 0.0, "int4 (vLLM/zentorch)": 0.0, "attention": 0.0,
              "rest (ops)": 0.0}
    top = []
    for e in prof.key_averages():
        name, us = e.key, e.self_cpu_time_total
        low = name.lower()
        if "w4jit" in low:
            key = "w4jit"
        elif any(w in low for w in ("wna16", "int4", "woq", "qlinear",
                                    "fused_moe", "fused_experts")):
            key = "int4 (vLLM/zentorch)"
        elif any(w in low for w in ("attn", "attention", "paged", "sdpa",
                                    "kv_cache", "rotary")):
            key = "attention"
        else:
            key = "rest (ops)"
        groups[key] += us
        top.append((us, name))
    top.sort(reverse=True)
    per_step = {k: v / 1000 / steps for k, v in groups.items()}
    per_step["python and scheduling"] = wall_ms - sum(per_step.values())
    return {"wall_ms_per_step": wall_ms, "per_step_ms": per_step,
            "top": [(n, round(us / 1000 / steps, 3)) for us, n in top[:12]]}


def _kl_and_max(lp_ref, lp):
    import numpy as np
    p = np.exp(lp_ref)
    finite = np.isfinite(lp_ref) & np.isfinite(lp)
    kl = float(np.sum(p[finite] * (lp_ref[finite] - lp[finite])))
    return kl, float(np.max(np.abs(lp_ref[finite] - lp[finite])))


def _run_path(args, path, tmp):
    variant, env_add = PATHS[path]
    env = dict(os.environ)
    env.update(env_add)
    env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    # vLLM serves with one torch thread unless OMP_NUM_THREADS says more.
    env["OMP_NUM_THREADS"] = str(args.threads)
    lp_out = os.path.join(tmp, f"{path}.npy")
    cmd = [sys.executable, "-m", "w4jit.vllm_bench", "--child", path,
           "--model", os.path.join(args.models, variant),
           "--logprobs-out", lp_out, "--decode", str(args.decode),
           "--prefill", str(args.prefill), "--repeats", str(args.repeats),
           "--batches", ",".join(map(str, args.batches))]
    if args.compile:
        cmd.append("--compile")
    if args.profile:
        cmd.append("--profile")
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines()
             if ln.startswith("W4JIT_BENCH ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout)[-3000:]
        return {"path": path, "error": f"exit {proc.returncode}: {tail}"}
    res = json.loads(lines[-1][len("W4JIT_BENCH "):])
    res["wall_s"] = time.time() - t0
    res["logprobs_file"] = lp_out
    res["log"] = [ln for ln in (proc.stdout + proc.stderr).splitlines()
                  if "w4jit:" in ln or "Using" in ln]
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models")
    ap.add_argument("--shape", default="tiny")
    ap.add_argument("--paths", default=",".join(PATHS))
    ap.add_argument("--rounds", type=int, default=1,
                    help="processes per path, paths interleaved")
    ap.add_argument("--repeats", type=int, default=3,
                    help="timings per shape inside each process")
    ap.add_argument("--batches", default="1,4,16")
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--prefill", type=int, default=512)
    ap.add_argument("--compile", action="store_true",
                    help="vLLM's default torch.compile (else enforce_eager)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--json")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--logprobs-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.batches = [int(b) for b in str(args.batches).split(",")]
    if args.child:
        args.path = args.child
        return _child(args)

    from . import vllm_models
    if not os.path.isdir(os.path.join(args.models, "bf16")):
        vllm_models.make_model(args.models, args.shape)
    import tempfile
    import numpy as np
    tmp = tempfile.mkdtemp(prefix="w4jit-vllm-bench.")
    paths = args.paths.split(",")
    runs = {p: [] for p in paths}
    for r in range(args.rounds):
        order = paths[r % len(paths):] + paths[:r % len(paths)]
        for p in order:
            res = _run_path(args, p, tmp)
            runs[p].append(res)
            brief = res.get("error", "")[-1500:] or {
                "decode": res["decode_tok_s"], "prefill_s": res["prefill_s"],
                "wall_s": round(res["wall_s"])}
            print(f"round {r} {p}: {brief}", file=sys.stderr, flush=True)
    report = {"paths": {}}
    ref_lp = None
    if runs.get("bf16") and "error" not in runs["bf16"][0]:
        ref_lp = np.load(runs["bf16"][0]["logprobs_file"])
    ref_greedy = None
    if runs.get("vllm-w4a16") and "error" not in runs["vllm-w4a16"][0]:
        ref_greedy = runs["vllm-w4a16"][0]
    for p, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            report["paths"][p] = {"error": rs[0]["error"]}
            continue
        row = {"decode_tok_s": {}, "prefill_s": {}}
        for b in args.batches:
            vals = [v for r in ok for v in r["decode_tok_s"][str(b)]]
            row["decode_tok_s"][b] = {"max": max(vals),
                                      "median": statistics.median(vals),
                                      "n": len(vals)}
        pv = [v for r in ok for v in r["prefill_s"]]
        row["prefill_s"] = {"min": min(pv), "median": statistics.median(pv),
                            "n": len(pv)}
        if ref_lp is not None:
            kl, mx = _kl_and_max(ref_lp, np.load(ok[0]["logprobs_file"]))
            row["vs_bf16"] = {"kl": kl, "max_abs_dlogprob": mx}
        if ref_greedy is not None:
            kl, mx = _kl_and_max(np.load(ref_greedy["logprobs_file"]),
                                 np.load(ok[0]["logprobs_file"]))
            row["vs_vllm_w4a16"] = {"kl": kl, "max_abs_dlogprob": mx}
            a, g = ref_greedy["greedy"], ok[0]["greedy"]
            first = next((i for i, (x, y) in enumerate(zip(a, g)) if x != y),
                         None)
            row["greedy_vs_vllm_w4a16"] = (
                "equal" if first is None else
                {"first_divergence": first,
                 "ref_top2_logprobs": ref_greedy["greedy_top2"][first],
                 "top2_logprobs": ok[0]["greedy_top2"][first]})
        row["log"] = ok[0].get("log", [])[:8]
        if "profile" in ok[0]:
            row["profile"] = ok[0]["profile"]
        report["paths"][p] = row
    text = json.dumps(report, indent=1, default=str)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
