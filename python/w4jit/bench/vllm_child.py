"""One path of w4jit.bench.vllm in this process (the parent starts one per
path and batch size): builds vLLM's offline LLM, records which kernels the
model's int4 layers and MoE experts really hold, times decode at one batch
size (and, when asked, the prefill, the first step's log-probabilities, 32
greedy tokens and a profile of a batch-1 step), and prints one JSON line
prefixed "W4JIT_BENCH "."""
import json
import os
import random
import sys
import time

GREEDY_STEPS = 32
PROMPT_LEN = 32


def _pin_platform():
    """The platform switches a path's environment asks for, before vLLM is
    imported. W4JIT_BENCH_NO_ZENTORCH hides zentorch (vLLM then takes its
    plain CPU platform and its own kernels even on a Zen CPU);
    W4JIT_BENCH_ZEN answers vLLM's AMD-Zen check yes (zentorch's kernels run
    on AVX-512 Intel CPUs too, so its paths can be timed there)."""
    if os.environ.get("W4JIT_BENCH_NO_ZENTORCH") == "1":
        sys.modules["zentorch"] = None  # import zentorch -> ImportError
    if os.environ.get("W4JIT_BENCH_ZEN") == "1":
        import vllm.platforms as platforms
        platforms._is_amd_zen_cpu = lambda: True


def _linear_kernel(module):
    if "_w4jit" in module.__dict__:
        return "W4jitWNA16LinearKernel"
    owner = getattr(module, "scheme", None) or getattr(module, "quant_method",
                                                       None)
    kernel = getattr(owner, "kernel", None)
    if kernel is None:
        return None
    name = type(kernel).__name__
    if name == "W4jitWNA16LinearKernel":  # declined: its base class ran
        return "CPUWNA16LinearKernel (w4jit declined)"
    return name


def _moe_experts(module):
    """Which experts run this MoE layer: "w4jit", or vLLM's experts class."""
    if "_w4jit_moe" in module.__dict__:
        return "w4jit"
    method = module.quant_method
    kernel = getattr(method, "moe_kernel", None)
    for path in (("impl", "fused_experts"), ("fused_experts",)):
        obj = kernel
        for name in path:
            obj = getattr(obj, name, None)
        if obj is not None:
            return type(obj).__name__
    cls = getattr(method, "experts_cls", None)
    return cls.__name__ if cls is not None else type(method).__name__


def kernels_in(model):
    """{"dense": sorted kernel classes of the int4 linear layers, "moe":
    sorted experts of the MoE layers} as the built model holds them."""
    dense, moe = set(), set()
    for module in model.modules():
        method = getattr(module, "quant_method", None)
        if method is not None and hasattr(method, "moe"):
            moe.add(_moe_experts(module))
            continue
        name = _linear_kernel(module)
        if name is not None:
            dense.add(name)
    return {"dense": sorted(dense), "moe": sorted(moe)}


def _prompts(b, n, vocab, seed):
    from vllm.inputs import TokensPrompt
    out = []
    for j in range(b):
        rng = random.Random(seed + j)
        out.append(TokensPrompt(prompt_token_ids=[rng.randrange(2, vocab)
                                                  for _ in range(n)]))
    return out


def _timed(llm, prompts, params):
    t0 = time.perf_counter()
    out = llm.generate(prompts, params, use_tqdm=False)
    return time.perf_counter() - t0, out


def _correctness(llm, vocab, tok_vocab, logprobs_out):
    """The first step's log-probabilities over the whole vocabulary (saved
    for the parent) and GREEDY_STEPS greedy tokens with their top two."""
    import numpy as np
    from vllm import SamplingParams
    p = _prompts(1, PROMPT_LEN, tok_vocab, 1000)
    _, out = _timed(llm, p, SamplingParams(temperature=0, max_tokens=1,
                                           logprobs=-1))
    lp = np.zeros(vocab, dtype=np.float64)
    for tok, v in out[0].outputs[0].logprobs[0].items():
        lp[tok] = v.logprob
    np.save(logprobs_out, lp)
    _, out = _timed(llm, p, SamplingParams(temperature=0,
                                           max_tokens=GREEDY_STEPS,
                                           logprobs=2, ignore_eos=True))
    o = out[0].outputs[0]
    return {"greedy": list(o.token_ids),
            "greedy_top2": [sorted((v.logprob for v in s.values()),
                                   reverse=True)[:2] for s in o.logprobs]}


def _decode(llm, b, tok_vocab, decode, repeats):
    """Tokens/s of B sequences, each `decode` new tokens, timed against the
    same request with one new token (so the prefill cancels)."""
    from vllm import SamplingParams
    ps = _prompts(b, PROMPT_LEN, tok_vocab, b)
    _timed(llm, ps, SamplingParams(temperature=0, max_tokens=4,
                                   ignore_eos=True))
    full = SamplingParams(temperature=0, max_tokens=decode, ignore_eos=True)
    one = SamplingParams(temperature=0, max_tokens=1, ignore_eos=True)
    rates = []
    for _ in range(repeats):
        t_full, _ = _timed(llm, ps, full)
        t_one, _ = _timed(llm, ps, one)
        rates.append(b * (decode - 1) / max(t_full - t_one, 1e-9))
    return rates


def _prefill(llm, n, tok_vocab, repeats):
    from vllm import SamplingParams
    pre = _prompts(1, n, tok_vocab, 7)
    one = SamplingParams(temperature=0, max_tokens=1, ignore_eos=True)
    _timed(llm, pre, one)
    return [_timed(llm, pre, one)[0] for _ in range(repeats)]


def _label_w4jit_calls():
    """torch's profiler does not see calls into a torchbind object; label
    the plugin's two calls (only in profiling runs: a label costs a few
    microseconds a call). The labels go around the bodies of the plugin's
    ops (w4jit/vllm/ops.py), which run at every step in eager and compiled
    mode alike, so nothing Dynamo traced changes."""
    import torch
    from ..vllm import ops

    def labelled(name, body):
        def call(*args):
            with torch.profiler.record_function(name):
                return body(*args)
        return call
    ops._linear = labelled("w4jit::linear", ops._linear)
    ops._experts = labelled("w4jit::moe", ops._experts)


# Profiler op names -> the part of a decode step they belong to.
_GROUPS = (("w4jit", ("w4jit",)),
           # The bf16 GEMMs left in an int4 model: the lm_head (and the
           # MoE router's small gate), through oneDNN or zentorch.
           ("bf16 GEMMs (lm_head, router)", ("onednn_mm", "linear_unary",
                                             "aten::mm", "aten::addmm",
                                             "aten::matmul")),
           ("int4 (vLLM/zentorch)", ("wna16", "int4", "woq", "qlinear",
                                     "fused_moe", "fused_experts",
                                     "group_matmul", "zentorch")),
           ("attention", ("attn", "attention", "paged", "sdpa", "kv_cache",
                          "rotary")))


def _profiled(llm, prompts, params, steps):
    """CPU self time by op, grouped, for one generate() call divided by
    `steps`, beside the wall time per step (the difference is Python and
    scheduling). The call is made once unprofiled first, so a compiled
    model's graphs for this shape exist before it is timed."""
    import torch
    llm.generate(prompts, params, use_tqdm=False)
    t0 = time.perf_counter()
    with torch.profiler.profile(activities=[
            torch.profiler.ProfilerActivity.CPU]) as prof:
        llm.generate(prompts, params, use_tqdm=False)
    wall_ms = (time.perf_counter() - t0) * 1000 / steps
    groups = {name: 0.0 for name, _ in _GROUPS}
    groups["rest (ops)"] = 0.0
    top = []
    for e in prof.key_averages():
        low = e.key.lower()
        key = next((name for name, words in _GROUPS
                    if any(w in low for w in words)), "rest (ops)")
        groups[key] += e.self_cpu_time_total
        top.append((e.self_cpu_time_total, e.key))
    top.sort(reverse=True)
    per_step = {k: v / 1000 / steps for k, v in groups.items()}
    per_step["python and scheduling"] = wall_ms - sum(per_step.values())
    return {"wall_ms_per_step": wall_ms, "per_step_ms": per_step,
            "top": [(n, round(us / 1000 / steps, 3)) for us, n in top[:12]]}


def _profile(llm, tok_vocab, prefill):
    """Where a batch-1 decode step's time goes, and where one prefill of
    `prefill` tokens goes (its "step" is the whole prompt and one sampled
    token), so compiled and eager can be compared op by op."""
    from vllm import SamplingParams
    if os.environ.get("VLLM_PLUGINS") == "w4jit":
        _label_w4jit_calls()
    steps = 17
    decode = _profiled(llm, _prompts(1, PROMPT_LEN, tok_vocab, 5),
                       SamplingParams(temperature=0, max_tokens=steps,
                                      ignore_eos=True), steps)
    decode["prefill"] = _profiled(
        llm, _prompts(1, prefill, tok_vocab, 9),
        SamplingParams(temperature=0, max_tokens=1, ignore_eos=True), 1)
    return decode


def run(args):
    _pin_platform()
    # vLLM's own AMX kernels (its int4 linear and attention) run tile
    # instructions without asking Linux for the tile state; on PyPI's torch
    # nothing else asks either, and the first one is SIGILL. The plugin asks
    # (w4jit/vllm/__init__.py); every other path gets the same here.
    import torch
    torch._C._cpu._init_amx()
    from vllm import LLM
    llm = LLM(model=args.model, dtype="bfloat16", seed=0,
              max_model_len=max(1024, args.prefill + 64),
              max_num_seqs=max(args.batch, 1), max_logprobs=-1,
              enforce_eager=not args.compile, enable_prefix_caching=False,
              tensor_parallel_size=args.tp)
    vocab = llm.llm_engine.model_config.get_vocab_size()
    tok_vocab = min(vocab, len(llm.get_tokenizer()))
    result = {"path": args.path, "model": args.model, "batch": args.batch}
    if args.tp == 1:
        result["ran"] = llm.apply_model(kernels_in)[0]
    if args.first:
        result.update(_correctness(llm, vocab, tok_vocab, args.logprobs_out))
        result["prefill_s"] = _prefill(llm, args.prefill, tok_vocab,
                                       args.repeats)
    if args.batch > 0:
        result["decode_tok_s"] = _decode(llm, args.batch, tok_vocab,
                                         args.decode, args.repeats)
    if args.first and args.profile:
        result["profile"] = _profile(llm, tok_vocab, args.prefill)
    print("W4JIT_BENCH " + json.dumps(result), flush=True)
