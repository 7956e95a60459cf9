"""The vLLM plugin (w4jit.vllm, docs/vllm.md) on tiny locally made models:
dense Llamas (compressed-tensors W4A16 g128 symmetric and with zero points,
GPTQ) and Qwen-MoE models (compressed-tensors both ways, GPTQ, AWQ,
MoeWNA16; one with a shared expert). vLLM picks w4jit's dense kernel, the
plugin takes every MoE layer whichever experts class vLLM chose (its own
modular CPUExpertsInt4 or zentorch's monolithic ZentorchExpertsInt4), and
the greedy tokens are those of vLLM's own CPU int4 kernels, or part from
them only at a near-tie. Skips, naming the reason, where vLLM is not
installed or w4jit is not installed as a distribution (the entry point vLLM
finds plugins by); scripts/test-vllm.sh runs it in the vLLM venv."""
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys

import pytest


def test_import_w4jit_does_not_import_vllm():
    code = ("import sys, w4jit, w4jit.bench\n"
            "print(any(m == 'vllm' or m.startswith('vllm.') "
            "for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], check=True,
                         capture_output=True, text=True)
    assert out.stdout.strip() == "False"


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
# tokens. argv: model folder, quantization override ("" for the
# checkpoint's own), tensor_parallel_size, "compile" for vLLM's default
# torch.compile mode (else enforce_eager).
_CHILD = r"""
import json, sys


def main():
    from w4jit.bench import vllm_child
    vllm_child._pin_platform()  # W4JIT_BENCH_ZEN / W4JIT_BENCH_NO_ZENTORCH
    import torch
    # vLLM's own AMX kernels need the tile permission that nothing asks for
    # when the plugin is off (docs/vllm.md); a no-op without AMX.
    torch._C._cpu._init_amx()
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt
    llm = LLM(model=sys.argv[1], dtype="bfloat16",
              enforce_eager=sys.argv[4] != "compile",
              max_model_len=256, max_num_seqs=2, seed=0,
              quantization=sys.argv[2] or None,
              tensor_parallel_size=int(sys.argv[3]))
    ranks = llm.apply_model(vllm_child.kernels_in)
    assert all(r == ranks[0] for r in ranks), ranks
    prompt = TokensPrompt(prompt_token_ids=[5, 17, 42, 99, 7, 300, 12, 64])
    out = llm.generate([prompt], SamplingParams(
        temperature=0, max_tokens=16, ignore_eos=True, logprobs=2),
        use_tqdm=False)[0].outputs[0]
    top2 = [sorted((v.logprob for v in s.values()), reverse=True)[:2]
            for s in out.logprobs]
    print("RESULT " + json.dumps({"kernels": ranks[0],
                                  "tokens": list(out.token_ids),
                                  "top2": top2}), flush=True)


# vLLM's TP workers are spawned processes, which import this file again.
if __name__ == "__main__":
    main()
"""

# vLLM's CPUExpertsInt4 quantizes the activations to int8 whatever
# VLLM_CPU_INT4_W4A8 says, so against it a W4A16 MoE is held to the
# near-tie a DA8W4 path gets: a layout misread diverges at once by whole
# nats, rounding at a step whose top two are a few tenths apart.
MOE_TIE = 0.5

DENSE = ("ct-w4a16-g128", "ct-w4a16-g128-asym", "gptq-w4a16-g128")
MOE = ("ct-w4a16-g128", "ct-w4a16-g128-asym", "gptq-w4a16-g128",
       "awq-w4a16-g128")


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from w4jit.bench import vllm_models
    out = tmp_path_factory.mktemp("vllm-models")
    return vllm_models.make_model(str(out), "tiny", variants=DENSE)


@pytest.fixture(scope="module")
def moe_models(tmp_path_factory):
    from w4jit.bench import vllm_models
    out = tmp_path_factory.mktemp("vllm-moe-models")
    return vllm_models.make_model(str(out), "moe-tiny", variants=MOE)


@pytest.fixture(scope="module")
def shared_moe_models(tmp_path_factory):
    from w4jit.bench import vllm_models
    out = tmp_path_factory.mktemp("vllm-shared-moe-models")
    return vllm_models.make_model(str(out), "moe-shared-tiny",
                                  variants=("ct-w4a16-g128",))


_CHILD_PATH = []


@pytest.fixture(scope="module", autouse=True)
def child_script(tmp_path_factory):
    """The child as a file: spawned TP workers re-import it."""
    path = tmp_path_factory.mktemp("vllm-child") / "child.py"
    path.write_text(_CHILD)
    _CHILD_PATH[:] = [str(path)]


def _run(model, plugins, w4a8, quantization="", tp=1, mode="eager",
         **env_add):
    env = dict(os.environ, VLLM_PLUGINS=plugins, VLLM_CPU_INT4_W4A8=w4a8,
               VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_KVCACHE_SPACE="1",
               **env_add)
    proc = subprocess.run([sys.executable, _CHILD_PATH[0], model,
                           quantization, str(tp), mode],
                          env=env, capture_output=True, text=True,
                          timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    log = proc.stdout + proc.stderr  # vLLM's log handler writes to stdout
    assert proc.returncode == 0 and lines, log[-4000:]
    return json.loads(lines[-1][len("RESULT "):]), log


def _same_or_near_tie(ref, got, tol=0.05):
    """Equal greedy tokens, or a first divergence where the reference's two
    best log-probabilities are within tol (a near-tie either kernel may
    break either way)."""
    for i, (a, b) in enumerate(zip(ref["tokens"], got["tokens"])):
        if a != b:
            gap = ref["top2"][i][0] - ref["top2"][i][1]
            assert gap < tol, (f"step {i}: {a} vs {b}, reference top-2 gap "
                               f"{gap:.3f}")
            return


@needs_vllm
@pytest.mark.parametrize("variant", DENSE)
def test_plugin_takes_the_layers_and_matches_vllm(tiny_models, variant):
    model = tiny_models[variant]
    ref, _ = _run(model, "", "0")
    assert ref["kernels"]["dense"] != ["W4jitWNA16LinearKernel"]
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
    """W4A16: every MoE layer on w4jit, vLLM's router, vLLM's own experts'
    greedy tokens (vLLM's CPUExpertsInt4 as the reference, to MOE_TIE)."""
    model = moe_models[variant]
    ref, log = _run(model, "", "0")
    assert ref["kernels"]["moe"] == ["CPUExpertsInt4"], log[-3000:]
    got, log = _run(model, "w4jit", "0")
    assert got["kernels"]["moe"] == ["w4jit"], log[-3000:]
    assert "MoE layers run on w4jit (w4a16" in log
    assert "MoE layer not taken" not in log
    _same_or_near_tie(ref, got, MOE_TIE)


@needs_vllm
@pytest.mark.parametrize("w4a8", ["0", "1"])
def test_moe_with_zero_points_vllm_refuses(moe_models, w4a8):
    """compressed-tensors experts with zero points: neither of vLLM's CPU
    experts classes takes them, so vLLM alone refuses the model; with the
    plugin they load and run on w4jit."""
    model = moe_models["ct-w4a16-g128-asym"]
    if w4a8 == "0":
        with pytest.raises(AssertionError, match="No WNA16 MoE backend"):
            _run(model, "", w4a8)
    got, log = _run(model, "w4jit", w4a8)
    assert got["kernels"]["moe"] == ["w4jit"], log[-3000:]
    assert "vLLM had chosen no CPU experts class" in log
    assert len(got["tokens"]) == 16


@needs_vllm
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
    assert len(got["tokens"]) == 16


@needs_vllm
def test_moe_wna16_method(moe_models):
    """vLLM's MoeWNA16 method (quantization="moe_wna16") rewrites GPTQ
    experts to its own byte layout, which vLLM's CPU backend then refuses
    ("requires AutoAWQConfig, AutoGPTQConfig or QuantizationArgs"); w4jit
    reads that layout, and decodes as vLLM does the same checkpoint through
    its GPTQ method."""
    model = moe_models["gptq-w4a16-g128"]
    with pytest.raises(AssertionError, match="got MoeWNA16Config"):
        _run(model, "", "0", quantization="moe_wna16")
    ref, _ = _run(model, "", "0")
    got, log = _run(model, "w4jit", "0", quantization="moe_wna16")
    assert got["kernels"]["moe"] == ["w4jit"], log[-3000:]
    assert "MoeWNA16 MoE layers run on w4jit" in log
    _same_or_near_tie(ref, got, MOE_TIE)


@needs_vllm
def test_moe_with_shared_expert(shared_moe_models):
    """A shared expert runs as vLLM runs it (in the MoE runner, its own int4
    linear layers on w4jit's dense kernel) and the routed experts on w4jit:
    decided at load time, no error at serve time."""
    model = shared_moe_models["ct-w4a16-g128"]
    ref, _ = _run(model, "", "0")
    got, log = _run(model, "w4jit", "0")
    assert got["kernels"] == {"dense": ["W4jitWNA16LinearKernel"],
                              "moe": ["w4jit"]}, log[-3000:]
    _same_or_near_tie(ref, got, MOE_TIE)


@needs_vllm
def test_vllms_default_compile_mode(moe_models):
    """vLLM's default mode (torch.compile, inductor): the dense layers run
    on w4jit; the experts are declined at load time with the reason (under
    vLLM's compiled graph a w4jit-experts model decodes other tokens than
    eagerly, docs/vllm.md), and the model decodes as vLLM's own compiled
    run does. vLLM's compile cache does not know the plugin, so each run
    compiles afresh."""
    model = moe_models["ct-w4a16-g128"]
    fresh = {"VLLM_DISABLE_COMPILE_CACHE": "1"}
    ref, _ = _run(model, "", "0", mode="compile", **fresh)
    got, log = _run(model, "w4jit", "0", mode="compile", **fresh)
    assert got["kernels"] == {"dense": ["W4jitWNA16LinearKernel"],
                              "moe": ["CPUExpertsInt4"]}, log[-3000:]
    assert "vLLM's compiled mode" in log
    _same_or_near_tie(ref, got)


@needs_vllm
@pytest.mark.parametrize("w4a8", ["0", "1"])
def test_tensor_parallel_2_matches_tp_1(moe_models, tiny_models, w4a8):
    """tensor_parallel_size=2 (two worker processes, one CPU each): every
    rank's dense layers and experts on w4jit, and TP=1's greedy tokens. In
    DA8W4 the row-parallel layers (o_proj, down_proj, the experts' w2) see
    half of K on each rank and quantize that half per token with its own
    scale, where TP=1 quantizes the whole row with one: the logits move by
    that rounding, so DA8W4 is held to a near-tie of 0.5 nats (docs/vllm.md,
    "Tensor parallel")."""
    tol = 0.05 if w4a8 == "0" else 0.5
    for model in (tiny_models["ct-w4a16-g128"], moe_models["ct-w4a16-g128"]):
        one, _ = _run(model, "w4jit", w4a8)
        two, log = _run(model, "w4jit", w4a8, tp=2,
                        VLLM_CPU_OMP_THREADS_BIND="0|1")
        assert two["kernels"]["dense"] == ["W4jitWNA16LinearKernel"], \
            log[-3000:]
        assert two["kernels"]["moe"] in ([], ["w4jit"]), log[-3000:]
        _same_or_near_tie(one, two, tol)


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
