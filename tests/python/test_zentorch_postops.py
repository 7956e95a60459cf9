"""W4JIT_NUMERICS=zentorch against zentorch's own kernel, post-op by post-op
(docs/numerics-zentorch.md, "Post-ops"): the same weights, x and operands
through torch.ops.zentorch.zentorch_woq_linear<post> and
torch.ops.w4jit.woq_linear<post>, bf16 in and out. The two may differ only
where the order in which they add the products flips a rounding: at most
0.5% of the outputs, none by more than one bf16 ulp of its row's scale (the
row's largest |y|). The binary post-ops' operands cancel most of the
linear's result, where rounding it to bf16 before them (or not) shows in
most outputs.

One exception, counted apart: zentorch's gelu (both forms) is not the exact
function in its tail. Where t < -2 about a quarter of its outputs differ
from the correctly rounded gelu (cancellation in 1 + tanh / 1 + erf, a few
f32 ulps of 1 that are most of the tiny result) and from any f32 form
tried; w4jit computes the tail without cancellation. Those outputs are far
below the row's resolution (measured: under 1/100 ulp of the row's scale),
so they are held to the ulp bound only, not counted.

Runs where zentorch is installed and its kernels run (AVX-512 with
AVX512_BF16; elsewhere its woq_linear returns garbage): skips naming the
reason otherwise. zentorch caches its repacked weights keyed on the
weight's address, so a weight freed and another allocated at its address
would read the first one's copy: each zentorch weight here is made once
per module and kept alive until the module's tests end (the cache stays on,
as zentorch runs by default), and is first checked against a float64
reference, so that a stale entry left by an earlier test's freed weight
fails here by name instead of as a numerics difference."""
import os

import pytest
import torch

from w4jit.bench import zentorch as bench_zentorch
from reference import random_layer, w4a16_reference

# N, K, group size (-1: per channel).
SHAPES = [(256, 1024, 128), (96, 512, -1)]
MS = [1, 4, 37]
ACTIVATIONS = ["", "_relu", "_sigmoid", "_gelu_tanh", "_gelu_erf"]
BINARY = ["_add", "_mul_add", "_add_add"]
MAX_SHARE_DIFFERENT = 0.005
GELU_TAIL = -2.0  # t below it: zentorch's gelu tail (see above)


@pytest.fixture(scope="module")
def zentorch_layers():
    zen, why = bench_zentorch.load_zentorch()
    if zen is None:
        pytest.skip(f"zentorch: {why}")
    torch.manual_seed(20261205)
    layers = []
    for n, k, group in SHAPES:
        q, s, _ = random_layer(n, k, group, False)
        bias = torch.randn(n).bfloat16()
        theirs = torch.ops.zentorch.zentorch_woq_repack_weight(q)
        x = torch.randn(8, k).bfloat16()
        want, _ = w4a16_reference(x, q, s, None, None, numerics="zentorch")
        got = torch.ops.zentorch.zentorch_woq_linear(x, theirs.t(), s, None)
        ulps = bench_zentorch.bf16_ulps(got.double(), want)
        assert ulps <= 2.0, (
            f"zentorch's own woq_linear is off by {ulps:.3g} bf16 ulps for "
            f"a new {n}x{k} weight: a stale entry of its address-keyed "
            "weight cache?")
        layers.append({
            "name": f"{n}x{k}_g{group}", "k": k, "s": s, "bias": bias,
            "theirs": theirs, "ours": torch.ops.w4jit.woq_repack_weight(q),
        })
    yield layers  # alive until the module's tests end: zentorch's cache


@pytest.fixture
def zentorch_numerics():
    old = os.environ.get("W4JIT_NUMERICS")
    os.environ["W4JIT_NUMERICS"] = "zentorch"
    yield
    if old is None:
        os.environ.pop("W4JIT_NUMERICS")
    else:
        os.environ["W4JIT_NUMERICS"] = old


def _operands(post, t):
    """The post-op's operands for a linear result t (f32 [M, N]), bf16:
    a first addend that cancels 97% of t, so that t's own rounding would
    show, and a multiplier in [-1, 1)."""
    scale = t.pow(2).mean(dim=-1, keepdim=True).sqrt()
    cancel = (-0.97 * t + 0.05 * scale * torch.randn_like(t)).bfloat16()
    small = (0.3 * scale * torch.randn_like(t)).bfloat16()
    mul = (2 * torch.rand_like(t) - 1).bfloat16()
    return {"_add": [cancel], "_mul_add": [mul, cancel],
            "_add_add": [cancel, small]}.get(post, [])


def _flips(ours, theirs, counted):
    """(outputs where `counted` that differ, the largest difference in bf16
    ulps of its row's scale, the row's largest |y|)."""
    a, b = ours.double(), theirs.double()
    scale = b.abs().amax(dim=-1, keepdim=True).clamp(min=2.0**-126)
    ulp = torch.exp2(torch.floor(torch.log2(scale)) - 7)
    d = (a - b).abs()
    return int(((d > 0) & counted).sum()), float((d / ulp).max())


@pytest.mark.parametrize("bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("post", ACTIVATIONS + BINARY,
                         ids=lambda p: p[1:] or "plain")
def test_woq_linear_post_op_matches_zentorch(zentorch_layers,
                                             zentorch_numerics, post, bias):
    zen_op = getattr(torch.ops.zentorch, f"zentorch_woq_linear{post}")
    our_op = getattr(torch.ops.w4jit, f"woq_linear{post}")
    report = []
    differ = total = 0
    for layer in zentorch_layers:
        s = layer["s"]
        b = layer["bias"] if bias else None
        for m in MS:
            x = torch.randn(m, layer["k"]).bfloat16()
            t = torch.ops.zentorch.zentorch_woq_linear(
                x, layer["theirs"].t(), s, None, b)
            extra = _operands(post, t.float())
            theirs = zen_op(x, layer["theirs"].t(), s, None, *extra, b)
            ours = our_op(x, layer["ours"].t(), s, None, *extra, b)
            counted = (t >= GELU_TAIL if post.startswith("_gelu")
                       else torch.ones_like(t, dtype=torch.bool))
            n, worst = _flips(ours, theirs, counted)
            differ += n
            total += theirs.numel()
            report.append(f"{layer['name']} m={m}: {n} of {theirs.numel()} "
                          f"differ, worst {worst:.3f} ulp")
            assert worst <= 1.0, "\n".join(report)
    assert differ <= MAX_SHARE_DIFFERENT * total, "\n".join(report)

