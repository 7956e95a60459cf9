"""The vLLM plugin (w4jit.vllm, docs/vllm.md) on a tiny locally made
compressed-tensors W4A16 g128 Llama (symmetric, with zero points) and its
GPTQ twin: vLLM picks w4jit's kernel, and the
greedy tokens are those of vLLM's own CPU int4 kernel. Skips, naming the
reason, where vLLM is not installed or w4jit is not installed as a
distribution (the entry point vLLM finds plugins by);
scripts/test-vllm.sh runs it in the vLLM venv."""
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys

import pytest


def test_import_w4jit_does_not_import_vllm():
    code = ("import sys, w4jit\n"
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

# Runs one vLLM engine in this child process (in-process engine core) and
# prints the kernel vLLM chose for the first linear layer and 16 greedy
# tokens.
_CHILD = r"""
import json, sys
import torch
# vLLM's own AMX kernels need the tile permission that nothing asks for
# when the plugin is off (docs/vllm.md); a no-op without AMX.
torch._C._cpu._init_amx()
from vllm import LLM, SamplingParams
from vllm.inputs import TokensPrompt
llm = LLM(model=sys.argv[1], dtype="bfloat16", enforce_eager=True,
          max_model_len=256, max_num_seqs=2, seed=0)


def kernel_name(model):
    layer = model.model.layers[0].self_attn.qkv_proj
    # compressed-tensors keeps the kernel on its scheme, GPTQ on the method.
    owner = getattr(layer, "scheme", None) or layer.quant_method
    return type(owner.kernel).__name__


kernel = llm.apply_model(kernel_name)[0]
prompt = TokensPrompt(prompt_token_ids=[5, 17, 42, 99, 7, 300, 12, 64])
out = llm.generate([prompt], SamplingParams(temperature=0, max_tokens=16,
                                             ignore_eos=True, logprobs=2),
                   use_tqdm=False)[0].outputs[0]
top2 = [sorted((v.logprob for v in s.values()), reverse=True)[:2]
        for s in out.logprobs]
print("RESULT " + json.dumps({"kernel": kernel, "tokens": list(out.token_ids),
                              "top2": top2}))
"""


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from w4jit import vllm_models
    out = tmp_path_factory.mktemp("vllm-models")
    return vllm_models.make_model(str(out), "tiny",
                                  variants=("ct-w4a16-g128",
                                            "ct-w4a16-g128-asym",
                                            "gptq-w4a16-g128"))


def _run(model, plugins, w4a8):
    env = dict(os.environ, VLLM_PLUGINS=plugins, VLLM_CPU_INT4_W4A8=w4a8,
               VLLM_ENABLE_V1_MULTIPROCESSING="0", VLLM_CPU_KVCACHE_SPACE="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD, model], env=env,
                          capture_output=True, text=True, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    # vLLM's log handler writes to stdout.
    return json.loads(lines[-1][len("RESULT "):]), proc.stdout + proc.stderr


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
@pytest.mark.parametrize("variant", ["ct-w4a16-g128", "ct-w4a16-g128-asym",
                                     "gptq-w4a16-g128"])
def test_plugin_takes_the_layers_and_matches_vllm(tiny_models, variant):
    model = tiny_models[variant]
    ref, _ = _run(model, "", "0")
    assert ref["kernel"] != "W4jitWNA16LinearKernel"
    got, log = _run(model, "w4jit", "0")
    assert got["kernel"] == "W4jitWNA16LinearKernel", log[-3000:]
    assert "layers run on w4jit" in log
    _same_or_near_tie(ref, got)


@needs_vllm
def test_plugin_da8w4_mode(tiny_models):
    got, log = _run(tiny_models["ct-w4a16-g128"], "w4jit", "1")
    assert got["kernel"] == "W4jitWNA16LinearKernel"
    assert "da8w4 layers run on w4jit" in log, log[-3000:]
    assert len(got["tokens"]) == 16


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
