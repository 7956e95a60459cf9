"""The vLLM plugin (w4jit.vllm, docs/vllm.md) on tiny locally made models:
dense Llamas (compressed-tensors W4A16 g128 symmetric and with zero points,
GPTQ) and Qwen-MoE models (compressed-tensors both ways, GPTQ, AWQ,
MoeWNA16; one with a shared expert), eager and in vLLM's default compiled
mode. vLLM picks w4jit's dense kernel, the plugin takes every MoE layer
whichever experts class vLLM chose (or where it has none), each experts
call agrees with a pure-torch model of the checkpoint's experts (the
reference every CPU has) and, compiled, equals w4jit.MoE on the same
inputs; greedy tokens equal vLLM's own kernels' where this CPU has them,
or part at a near-tie of the reference's. Skips, naming the reason, where
vLLM is not installed or w4jit is not installed as a distribution (the
entry point vLLM finds plugins by); scripts/test-vllm.sh runs it in the
vLLM venv."""
import importlib.metadata
import importlib.util
import json
import os
import statistics
import subprocess
import sys

import pytest

from w4jit.bench import vllm as vllm_bench


def test_import_w4jit_does_not_import_vllm():
    code = ("import sys, w4jit, w4jit.bench\n"
            "print(any(m == 'vllm' or m.startswith('vllm.') "
            "for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_the_harness_refuses_a_path_its_cpu_would_relabel():
    """vLLM's W4A8 kernels are AMX kernels; without AMX vLLM quietly runs
    W4A16 for VLLM_CPU_INT4_W4A8=1, so the harness refuses that path
    rather than time it under a false name. Without AVX-512 vLLM has no
    int4 linear op, and zentorch's kernels need AVX512_BF16. The plugin's
    paths expect w4jit's experts compiled as eager."""
    assert "AMX" in vllm_bench.not_runnable("vllm-w4a8", {"avx512f"})
    assert vllm_bench.not_runnable("vllm-w4a8",
                                   {"avx512f", "amx_int8"}) is None
    assert vllm_bench.not_runnable("vllm-w4a16", {"avx512f"}) is None
    for path in ("vllm-w4a16", "vllm-w4a8"):
        assert "cpu_gemm_wna16" in vllm_bench.not_runnable(path, {"avx2"})
    assert "AVX512_BF16" in vllm_bench.not_runnable("zentorch-da8w4",
                                                    {"avx512f"})
    assert vllm_bench.not_runnable("zentorch-w4a16",
                                   {"avx512f", "avx512_bf16"}) is None
    assert vllm_bench.not_runnable("w4jit-da8w4", set()) is None
    assert vllm_bench.expected_experts("w4jit-da8w4") == "w4jit"


def _skip_reason():
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (scripts/test-vllm.sh runs this test)"
    eps = importlib.metadata.entry_points(group="vllm.general_plugins")
    if not any(ep.name == "w4jit" for ep in eps):
        return ("w4jit is not installed as a distribution, so vLLM finds no "
                "'w4jit' entry point (pip install --no-build-isolation .)")
    return None


needs_vllm = pytest.mark.skipif(_skip_reason() is not None,
                                reason=str(_skip_reason()))

# Runs one vLLM engine in a child process (in-process engine core) and
# prints the kernels the model's int4 layers and experts hold and 16 greedy
# tokens. argv[1]: JSON {"model", "quantization" ("" for the checkpoint's
# own), "tp", "mode" ("compile" for vLLM's default torch.compile mode, else
# enforce_eager), "check" (null, or {"shape", "seed", "variant"} of the
# locally made model: record every experts call the model makes, with the
# plugin's observer, and check each against w4jit.MoE run again on the
# same inputs, exactly, and against the pure-torch model of the
# checkpoint's experts, w4jit.bench.vllm_experts_ref)}.
_CHILD = r"""
import json, re, sys


def record_experts_calls():
    from w4jit.vllm import ops
    calls = []
    def observe(layer_id, x, topk_ids, topk_weights, y):
        if len(calls) < 256:
            calls.append((layer_id, x.clone(), topk_ids.clone(),
                          topk_weights.clone(), y.clone()))
    ops.observers.append(observe)
    return calls


def layer_index_of_ids(model):
    return {m.__dict__["_w4jit_moe_id"]: int(re.search(r"layers\.(\d+)\.",
                                                        name)[1])
            for name, m in model.named_modules()
            if "_w4jit_moe_id" in m.__dict__}


def check_calls(calls, ids, check):
    import torch
    from w4jit.bench import vllm_experts_ref as ref
    from w4jit.vllm import ops
    experts = ref.experts(check["shape"], check["seed"], check["variant"])
    unequal, err = 0, 0.0
    for layer_id, x, topk_ids, topk_weights, y in calls:
        again = ops.layer(layer_id)(x, topk_ids, topk_weights)
        same = (y == again) | (y.isnan() & again.isnan())
        unequal += not bool(same.all())
        want = ref.moe(x, topk_ids, topk_weights, *experts[ids[layer_id]])
        err = max(err, ref.relative_error(y, want))
    return {"calls": len(calls), "unequal": unequal, "torch_err": err,
            "nan_calls": sum(not bool(c[3].isfinite().all()) for c in calls)}


def routing_of(calls, ids, check):
    # Per experts call, in order: its layer, the experts each token was
    # routed to, and the least gap over its tokens between the k-th and the
    # (k+1)-th router logit, recomputed in f32 from the call's x and the
    # checkpoint's router gate.
    from w4jit.bench import vllm_experts_ref as ref
    gates = ref.router_gates(check["shape"], check["seed"])
    out = []
    for layer_id, x, topk_ids, _, _ in calls:
        layer = ids[layer_id]
        k = topk_ids.shape[-1]
        logits = (x.float() @ gates[layer].t()).sort(-1, descending=True)[0]
        out.append({"layer": layer, "ids": topk_ids.tolist(),
                    "margin": float((logits[:, k - 1] - logits[:, k]).min())})
    return out


def main():
    args = json.loads(sys.argv[1])
    from w4jit.bench import vllm_child
    vllm_child._pin_platform()  # W4JIT_BENCH_ZEN / W4JIT_BENCH_NO_ZENTORCH
    import torch
    # vLLM's own AMX kernels need the tile permission that nothing asks for
    # when the plugin is off (docs/vllm.md); a no-op without AMX.
    torch._C._cpu._init_amx()
    calls = record_experts_calls() if args["check"] else None
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    llm = LLM(model=args["model"], dtype="bfloat16",
              enforce_eager=args["mode"] != "compile",
              max_model_len=256, max_num_seqs=2, seed=0,
              quantization=args["quantization"] or None,
              tensor_parallel_size=args["tp"])
    # The calls of the generation alone (not those of the engine's warm-up).
    first_call = 0 if calls is None else len(calls)
    ranks = llm.apply_model(vllm_child.kernels_in)
    assert all(r == ranks[0] for r in ranks), ranks
    prompt = TokensPrompt(prompt_token_ids=[5, 17, 42, 99, 7, 300, 12, 64])
    out = llm.generate([prompt], SamplingParams(
        temperature=0, max_tokens=16, ignore_eos=True, logprobs=2),
        use_tqdm=False)[0].outputs[0]
    top2 = [sorted((v.logprob for v in s.values()), reverse=True)[:2]
            for s in out.logprobs]
    result = {"kernels": ranks[0], "tokens": list(out.token_ids),
              "top2": top2}
    if calls is not None:
        ids = llm.apply_model(layer_index_of_ids)[0]
        result["experts"] = check_calls(calls, ids, args["check"])
        result["routing"] = routing_of(calls[first_call:], ids, args["check"])
    print("RESULT " + json.dumps(result), flush=True)


# vLLM's TP workers are spawned processes, which import this file again.
if __name__ == "__main__":
    main()
"""

# Near-ties: at the first step where two runs' greedy tokens part, the
# reference's two best log-probabilities must be closer than at its
# typical step (at most the median of its own top-two gaps) and at most
# MAX_TIE nats apart: a layout misread diverges at once by whole nats,
# rounding only where the reference itself was nearly undecided. vLLM's
# CPUExpertsInt4 quantizes the activations to int8 whatever
# VLLM_CPU_INT4_W4A8 says, so against it even W4A16 is a DA8W4 comparison.
MAX_TIE = 0.5
# A MoE model's router has near-ties of its own, which the final logits do
# not show: where a token's k-th and (k+1)-th router logits are this close
# (the tiny models' router logits spread about 1.6; a bf16 ulp there is
# 0.008), a 1% change of the layer's input (inductor's fused RMS norm, or
# another kernel's f32 rounding) routes it to another expert, and the
# logits move by a nat or more from there. Traced in
# docs/performance/2026-12-07-xeon-amx-prefetch.md: 0.005 and 0.015 at the
# parting call, 0.03 to 0.5 at the others.
ROUTER_TIE = 0.05
# The pure-torch model of the checkpoint's experts against w4jit's, per
# call, ||y - y_ref|| / ||y_ref||: bf16 activations and outputs (W4A16), or
# int8 activations per token (DA8W4).
TORCH_ERR = {"0": 0.01, "1": 0.05}

DENSE = ("ct-w4a16-g128", "ct-w4a16-g128-asym", "gptq-w4a16-g128",
         "awq-w4a16-g128")
MOE = ("ct-w4a16-g128", "ct-w4a16-g128-asym", "gptq-w4a16-g128",
       "awq-w4a16-g128")
SEED = 0


# zentorch's kernels need AVX512_BF16 (its DA8W4 path dies with SIGILL
# without it, Ice Lake for one).
ZENTORCH_RUNS = "avx512_bf16" in vllm_bench.cpu_flags()


# vLLM's own int4 linear kernel where its op library for this CPU has one;
# elsewhere (no AVX-512) the reference is vLLM's bf16 layers on the int4
# weights dequantized (vllm_models.DEQUANT), which every CPU runs.
VLLM_INT4_MISSING = vllm_bench.vllm_int4_linear_missing()


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from w4jit.bench import vllm_models
    out = tmp_path_factory.mktemp("vllm-models")
    variants = DENSE
    if VLLM_INT4_MISSING is not None:
        variants += tuple(vllm_models.DEQUANT + v for v in DENSE)
    return vllm_models.make_model(str(out), "tiny", SEED, variants=variants)


@pytest.fixture(scope="module")
def moe_models(tmp_path_factory):
    from w4jit.bench import vllm_models
    out = tmp_path_factory.mktemp("vllm-moe-models")
    return vllm_models.make_model(str(out), "moe-tiny", SEED, variants=MOE)


@pytest.fixture(scope="module")
def shared_moe_models(tmp_path_factory):
    from w4jit.bench import vllm_models
    out = tmp_path_factory.mktemp("vllm-shared-moe-models")
    return vllm_models.make_model(str(out), "moe-shared-tiny", SEED,
                                  variants=("ct-w4a16-g128",))


_CHILD_PATH = []
# Engine starts cost seconds eager and tens of seconds compiled: a run that
# several tests compare against is made once (same model, switches and
# environment, same result).
_RUNS = {}


@pytest.fixture(scope="module", autouse=True)
def child_script(tmp_path_factory):
    """The child as a file: spawned TP workers re-import it."""
    path = tmp_path_factory.mktemp("vllm-child") / "child.py"
    path.write_text(_CHILD)
    _CHILD_PATH[:] = [str(path)]


def _run(model, plugins, w4a8, quantization="", tp=1, mode="eager",
         check=None, **env_add):
    key = json.dumps([model, plugins, w4a8, quantization, tp, mode, check,
                      sorted(env_add.items())])
    if key in _RUNS:
        return _RUNS[key]
    env = dict(os.environ, VLLM_PLUGINS=plugins, VLLM_CPU_INT4_W4A8=w4a8,
               VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_KVCACHE_SPACE="1",
               **env_add)
    if mode == "compile":
        # vLLM's compile cache does not key on the plugin (docs/vllm.md).
        env["VLLM_DISABLE_COMPILE_CACHE"] = "1"
    args = {"model": model, "quantization": quantization, "tp": tp,
            "mode": mode, "check": check}
    proc = subprocess.run([sys.executable, _CHILD_PATH[0], json.dumps(args)],
                          env=env, capture_output=True, text=True,
                          timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    log = proc.stdout + proc.stderr  # vLLM's log handler writes to stdout
    assert proc.returncode == 0 and lines, log[-4000:]
    _RUNS[key] = json.loads(lines[-1][len("RESULT "):]), log
    return _RUNS[key]


def _check(variant, moe_shape="moe-tiny"):
    return {"shape": moe_shape, "seed": SEED, "variant": variant}


def _vllms_own(model, w4a8, **kw):
    """vLLM's own run of the model without the plugin, or None where vLLM
    has no CPU experts class for it on this CPU (its CPUExpertsInt4 needs
    AMX: "No WNA16 MoE backend supports the deployment configuration")."""
    try:
        return _run(model, "", w4a8, **kw)[0]
    except AssertionError as e:
        if "No WNA16 MoE backend" in str(e):
            return None
        raise


def _router_tie(ref, got, step):
    """Whether the runs' routing parts at a router near-tie before the
    token of `step`: at the first experts call whose experts differ between
    the two runs, a token's k-th and (k+1)-th router logits within
    ROUTER_TIE in either run. Where only one run's calls were recorded
    (vLLM's own experts have no observer), a near-tie in any of its calls
    before that token. Each call of a recorded run is checked on its own
    besides (_experts_checked)."""
    runs = [r["routing"] for r in (ref, got) if r.get("routing")]
    if not runs:
        return False
    # The prefill calls each MoE layer once, then each step once more.
    last = (step + 1) * len({c["layer"] for c in runs[0]})
    if len(runs) == 1:
        return any(c["margin"] <= ROUTER_TIE for c in runs[0][:last])
    for a, b in zip(runs[0][:last], runs[1][:last]):
        if a["ids"] != b["ids"]:
            return min(a["margin"], b["margin"]) <= ROUTER_TIE
    return False


def _same_or_near_tie(ref, got, max_tie=MAX_TIE):
    """Equal greedy tokens, or a first divergence at a near-tie of the
    reference's (see MAX_TIE), or after the runs' routing parted at a
    router near-tie (see ROUTER_TIE)."""
    gaps = [a - b for a, b in ref["top2"]]
    # The log-probabilities come out of bf16 logits: a gap equal to the
    # median may differ from it in the last float bits.
    limit = min(statistics.median(gaps), max_tie) + 1e-6
    for i, (a, b) in enumerate(zip(ref["tokens"], got["tokens"])):
        if a != b:
            if gaps[i] > limit and _router_tie(ref, got, i):
                return
            assert gaps[i] <= limit, (
                f"step {i}: {a} vs {b}, reference top-2 gap {gaps[i]:.3f}; "
                f"a near-tie is <= {limit:.3f} (the median of its gaps "
                f"{sorted(round(g, 3) for g in gaps)}, at most {max_tie})")
            return


def _experts_checked(got, w4a8, log):
    """Every recorded experts call equals w4jit.MoE run again on its inputs
    and agrees with the pure-torch model of the checkpoint's experts."""
    e = got["experts"]
    assert e["calls"] > 0, log[-3000:]
    assert e["unequal"] == 0, e
    assert e["torch_err"] <= TORCH_ERR[w4a8], e


def _dense_reference(tiny_models, variant):
    """vLLM without the plugin on the int4 checkpoint, or where vLLM has no
    int4 linear op on this CPU, on its dequantized twin (bf16 layers)."""
    if VLLM_INT4_MISSING is None:
        ref, _ = _run(tiny_models[variant], "", "0")
        assert ref["kernels"]["dense"] != ["W4jitWNA16LinearKernel"]
        return ref
    from w4jit.bench import vllm_models
    ref, _ = _run(tiny_models[vllm_models.DEQUANT + variant], "", "0")
    assert ref["kernels"]["dense"] == []
    return ref


@needs_vllm
@pytest.mark.skipif(VLLM_INT4_MISSING is None,
                    reason="vLLM's op library for this CPU has its int4 "
                    "linear op; the tests below compare against it")
def test_vllm_alone_has_no_int4_linear_op_here(tiny_models):
    """What docs/vllm.md says of CPUs without AVX-512: vLLM alone picks
    CPUWNA16LinearKernel for an int4 layer and fails at the first forward,
    so the plugin is the only way to run the checkpoint there."""
    with pytest.raises(AssertionError, match="cpu_gemm_wna16"):
        _run(tiny_models["ct-w4a16-g128"], "", "0")


@needs_vllm
@pytest.mark.parametrize("variant", DENSE)
def test_plugin_takes_the_layers_and_matches_vllm(tiny_models, variant):
    model = tiny_models[variant]
    ref = _dense_reference(tiny_models, variant)
    got, log = _run(model, "w4jit", "0")
    assert got["kernels"]["dense"] == ["W4jitWNA16LinearKernel"], log[-3000:]
    assert "layers run on w4jit" in log
    _same_or_near_tie(ref, got)


@needs_vllm
def test_plugin_da8w4_mode(tiny_models):
    got, log = _run(tiny_models["ct-w4a16-g128"], "w4jit", "1")
    assert got["kernels"]["dense"] == ["W4jitWNA16LinearKernel"]
    assert "da8w4 layers run on w4jit" in log, log[-3000:]
    assert len(got["tokens"]) == 16


@needs_vllm
@pytest.mark.parametrize("variant", [v for v in MOE if "asym" not in v])
def test_moe_experts_on_w4jit_match_vllms(moe_models, variant):
    """W4A16: every MoE layer on w4jit, vLLM's router; each experts call
    agrees with the pure-torch model of the checkpoint's experts, and the
    greedy tokens are vLLM's own experts' (CPUExpertsInt4, where this CPU
    has it) or part from them at a near-tie."""
    model = moe_models[variant]
    got, log = _run(model, "w4jit", "0", check=_check(variant))
    assert got["kernels"] == {"dense": ["W4jitWNA16LinearKernel"],
                              "moe": ["w4jit"]}, log[-3000:]
    assert "MoE layers run on w4jit (w4a16" in log
    assert "MoE layer not taken" not in log
    _experts_checked(got, "0", log)
    ref = _vllms_own(model, "0")
    if ref is not None:
        assert ref["kernels"]["moe"] == ["CPUExpertsInt4"]
        _same_or_near_tie(ref, got)


@needs_vllm
@pytest.mark.parametrize("w4a8", ["0", "1"])
def test_moe_with_zero_points_vllm_refuses(moe_models, w4a8):
    """compressed-tensors experts with zero points: neither of vLLM's CPU
    experts classes takes them, so vLLM alone refuses the model; with the
    plugin they load and run on w4jit, checked call by call against the
    pure-torch model of the checkpoint's experts."""
    variant = "ct-w4a16-g128-asym"
    model = moe_models[variant]
    if w4a8 == "0":
        assert _vllms_own(model, w4a8) is None
    got, log = _run(model, "w4jit", w4a8, check=_check(variant))
    assert got["kernels"]["moe"] == ["w4jit"], log[-3000:]
    assert "vLLM had chosen no CPU experts class" in log
    _experts_checked(got, w4a8, log)


@needs_vllm
@pytest.mark.skipif(not ZENTORCH_RUNS, reason="zentorch's kernels need "
                    "AVX512_BF16, which this CPU lacks: vLLM's Zen path "
                    "cannot run here")
def test_moe_da8w4_takes_zentorchs_monolithic_experts(moe_models):
    """On vLLM's Zen platform with DA8W4 (its default there) vLLM chooses
    zentorch's monolithic ZentorchExpertsInt4: the plugin takes those layers
    too, routing through vLLM's router, and decodes as zentorch's own
    experts do or parts from them at a near-tie."""
    model = moe_models["ct-w4a16-g128"]
    ref, log = _run(model, "", "1", W4JIT_BENCH_ZEN="1")
    assert ref["kernels"]["moe"] == ["ZentorchExpertsInt4"], log[-3000:]
    got, log = _run(model, "w4jit", "1", W4JIT_BENCH_ZEN="1")
    assert got["kernels"]["moe"] == ["w4jit"], log[-3000:]
    assert "vLLM had chosen ZentorchExpertsInt4" in log
    assert "MoE layers run on w4jit (da8w4" in log
    _same_or_near_tie(ref, got)


@needs_vllm
def test_moe_wna16_method(moe_models):
    """vLLM's MoeWNA16 method (quantization="moe_wna16") rewrites GPTQ
    experts to its own byte layout, which vLLM's CPU backend then refuses
    ("requires AutoAWQConfig, AutoGPTQConfig or QuantizationArgs"); w4jit
    reads that layout: each call agrees with the pure-torch model of the
    experts, and the tokens are vLLM's GPTQ path's (where it runs here).
    Without AMX vLLM refuses the model one step earlier: its oracle finds
    no CPU experts class at all."""
    variant = "gptq-w4a16-g128"
    model = moe_models[variant]
    with pytest.raises(AssertionError, match="got MoeWNA16Config|No WNA16 "
                       "MoE backend supports the deployment configuration"):
        _run(model, "", "0", quantization="moe_wna16")
    got, log = _run(model, "w4jit", "0", quantization="moe_wna16",
                    check=_check(variant))
    assert got["kernels"]["moe"] == ["w4jit"], log[-3000:]
    assert "MoeWNA16 MoE layers run on w4jit" in log
    _experts_checked(got, "0", log)
    ref = _vllms_own(model, "0")
    if ref is not None:
        _same_or_near_tie(ref, got)


@needs_vllm
def test_moe_with_shared_expert(shared_moe_models):
    """A shared expert runs as vLLM runs it (in the MoE runner, its own int4
    linear layers on w4jit's dense kernel) and the routed experts on w4jit:
    decided at load time, no error at serve time."""
    variant = "ct-w4a16-g128"
    model = shared_moe_models[variant]
    got, log = _run(model, "w4jit", "0",
                    check=_check(variant, "moe-shared-tiny"))
    assert got["kernels"] == {"dense": ["W4jitWNA16LinearKernel"],
                              "moe": ["w4jit"]}, log[-3000:]
    _experts_checked(got, "0", log)
    ref = _vllms_own(model, "0")
    if ref is not None:
        _same_or_near_tie(ref, got)


@needs_vllm
@pytest.mark.parametrize("w4a8", ["0", "1"])
def test_tensor_parallel_2_matches_tp_1(moe_models, tiny_models, w4a8):
    """tensor_parallel_size=2 (two worker processes, one CPU each): every
    rank's dense layers and experts on w4jit, and TP=1's greedy tokens or a
    near-tie of TP=1's. In DA8W4 the row-parallel layers (o_proj,
    down_proj, the experts' w2) see half of K on each rank and quantize
    that half per token with its own scale, where TP=1 quantizes the whole
    row with one: the logits move by that rounding (docs/vllm.md, "Tensor
    parallel")."""
    for model in (tiny_models["ct-w4a16-g128"], moe_models["ct-w4a16-g128"]):
        one, _ = _run(model, "w4jit", w4a8)
        two, log = _run(model, "w4jit", w4a8, tp=2,
                        VLLM_CPU_OMP_THREADS_BIND="0|1")
        assert two["kernels"]["dense"] == ["W4jitWNA16LinearKernel"], \
            log[-3000:]
        assert two["kernels"]["moe"] in ([], ["w4jit"]), log[-3000:]
        _same_or_near_tie(one, two)


# vLLM's default mode (torch.compile with inductor), every experts format
# the plugin reads, in both modes: (variant, VLLM_CPU_INT4_W4A8,
# quantization override, model fixture's shape).
COMPILED = (("ct-w4a16-g128", "0", "", "moe-tiny"),
            ("ct-w4a16-g128", "1", "", "moe-tiny"),
            ("ct-w4a16-g128-asym", "1", "", "moe-tiny"),
            ("gptq-w4a16-g128", "1", "", "moe-tiny"),
            ("awq-w4a16-g128", "0", "", "moe-tiny"),
            ("gptq-w4a16-g128", "0", "moe_wna16", "moe-tiny"),
            ("ct-w4a16-g128", "0", "", "moe-shared-tiny"))


@needs_vllm
@pytest.mark.parametrize("variant,w4a8,quantization,shape", COMPILED)
def test_compiled_mode_experts_on_w4jit(moe_models, shared_moe_models,
                                        variant, w4a8, quantization, shape):
    """vLLM's default compiled mode: the dense layers and every MoE layer
    on w4jit; vLLM's warm-up step, whose garbage (NaN routing weights) the
    experts meet only compiled, does not stop the engine; every experts
    call of the compiled model equals w4jit.MoE run again on the same
    inputs, exactly, and agrees with the pure-torch model of the experts;
    the greedy tokens are the eager run's, or part at a near-tie (a router
    near-tie can flip under inductor's fused RMS norm, for vLLM's own
    experts too: docs/vllm.md). The shared-expert model runs W4A16 here:
    in DA8W4 its eager and compiled runs part at the first token by a
    0.9-nat gap with vLLM's own W4A8 kernels as well as with w4jit's
    (docs/vllm.md, "vLLM's compiled mode"), while every experts call
    still checks exactly."""
    models = shared_moe_models if shape == "moe-shared-tiny" else moe_models
    model = models[variant]
    check = _check(variant, shape)
    got, log = _run(model, "w4jit", w4a8, quantization, mode="compile",
                    check=check)
    assert got["kernels"] == {"dense": ["W4jitWNA16LinearKernel"],
                              "moe": ["w4jit"]}, log[-3000:]
    assert "MoE layer not taken" not in log
    _experts_checked(got, w4a8, log)
    eager, _ = _run(model, "w4jit", w4a8, quantization, check=check)
    _same_or_near_tie(eager, got)


@needs_vllm
def test_layer_bench_against_vllms_own_kernel(capsys):
    """python3 -m w4jit.bench.vllm_layers times vLLM's CPUWNA16 kernel class
    on the checkpoint w4jit runs, and both compute the same layer."""
    import torch
    from w4jit.bench import vllm_layers
    if VLLM_INT4_MISSING is not None:
        with pytest.raises(SystemExit):
            vllm_layers.main(["--shape", "256,512", "--m", "1"])
        assert "cpu_gemm_wna16" in capsys.readouterr().err
        return
    threads = torch.get_num_threads()
    before_env = os.environ.get("VLLM_CPU_INT4_W4A8")
    try:
        rows = vllm_layers.main(["--shape", "256,512", "--m", "1,40",
                                 "--modes", "w4a16,w4a8", "--seconds", "0",
                                 "--threads", "1"])
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    modes = {row[3] for row in rows}
    assert "w4a16" in modes, out
    for name, n, k, mode, m, v_min, _, w_min, _, rel, kernels in rows:
        assert (n, k) == (256, 512) and v_min > 0 and w_min > 0, out
        assert rel < 1e-2, (mode, m, rel, kernels)
    assert "| 256,512 | 256 | 512 | w4a16 | 40 |" in out
    # vLLM's mode variable is set only while it processes the weights.
    assert os.environ.get("VLLM_CPU_INT4_W4A8") == before_env


@needs_vllm
def test_can_implement_names_why_it_declines():
    import torch
    from vllm.model_executor.kernels.linear import MPLinearLayerConfig
    from vllm.scalar_type import scalar_types
    from w4jit.vllm.linear_kernel import W4jitWNA16LinearKernel
    c = MPLinearLayerConfig(full_weight_shape=(384, 256),
                            partition_weight_shape=(384, 256),
                            weight_type=scalar_types.uint4b8,
                            act_type=torch.bfloat16, group_size=256,
                            zero_points=False)
    ok, why = W4jitWNA16LinearKernel.can_implement(c)
    assert not ok and "group size 256 does not divide K = 384" in why
    c.group_size = 128
    assert W4jitWNA16LinearKernel.can_implement(c) == (True, None)


@needs_vllm
def test_a_hook_that_does_not_fit_logs_once_and_steps_aside(caplog):
    """A vLLM whose internals moved: install() raising is one warning and
    vLLM's own kernels, never an exception out of register()."""
    import w4jit.vllm as plugin
    with caplog.at_level("WARNING", logger="vllm.w4jit"):
        plugin._install("no_such_hook", "test layers")
    assert any("do not fit the plugin's no_such_hook hook" in r.message
               and "vLLM keeps its own test layers" in r.message
               for r in caplog.records)


@needs_vllm
def test_moe_wna16_zero_points_regroup():
    """MoeWNA16's uint8 [E, N/2, G] zero points (two along N per byte) are
    compressed-tensors' int32 [E, N/8, G] words, nibble for nibble."""
    import torch
    from w4jit import formats
    from w4jit.vllm.moe_method import _moe_wna16_zeros
    g = torch.Generator().manual_seed(0)
    z = torch.randint(0, 16, (2, 3, 16), generator=g)  # [E, G, N]
    bytes_ = (z[..., 0::2] + 16 * z[..., 1::2]).to(torch.uint8)  # [E, G, N/2]
    got = _moe_wna16_zeros(bytes_.transpose(1, 2).contiguous())
    want = torch.stack([formats.pack_compressed_tensors(
        torch.zeros(16, 8, dtype=torch.int8),
        torch.ones(3, 16), z[e].to(torch.int8))[2] for e in range(2)])
    assert torch.equal(got, want)
