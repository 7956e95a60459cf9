"""torch.ops.w4jit.fused_moe (zentorch's / vLLM's fused-MoE arguments) over
stacked repacked int4 experts, against a float64 torch composition."""
import pytest
import torch

import w4jit  # noqa: F401
from reference import (MOE_ACTS as ACTS, MOE_GATES, bf16_ulp,
                       moe_da8w4_reference, moe_reference, random_layer)

OPS = torch.ops.w4jit
E, H, I, GS = 6, 128, 64, 32


def _experts(u4):
    """Per expert: q13 [2I, H], q2 [H, I] int8, scales [G, N], zeros."""
    w13 = [random_layer(2 * I, H, GS, u4) for _ in range(E)]
    w2 = [random_layer(H, I, GS, u4) for _ in range(E)]
    return w13, w2


def _stack(layers):
    packed = torch.stack([OPS.woq_repack_weight(q) for q, _, _ in layers])
    scales = torch.stack([s for _, s, _ in layers])
    zeros = (torch.stack([z for _, _, z in layers])
             if layers[0][2] is not None else None)
    return packed, scales, zeros


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("t,k", [(1, 2), (5, 1), (33, 4)])
@pytest.mark.parametrize("act", MOE_GATES)
@pytest.mark.parametrize("u4", [False, True])
def test_w4a16_matches_reference(dtype, t, k, act, u4):
    w13, w2 = _experts(u4)
    p13, s13, z13 = _stack(w13)
    p2, s2, z2 = _stack(w2)
    b13 = torch.randn(E, 2 * I) * 0.1
    b2 = torch.randn(E, H) * 0.1
    x = torch.randn(t, H).to(dtype)
    ids = torch.stack([torch.randperm(E)[:k] for _ in range(t)]).int()
    weights = torch.rand(t, k)
    out = torch.full((t, H), float("nan"), dtype=dtype)
    OPS.fused_moe(out, x, p13, p2, b13, b2, weights, ids, False, act, s13, s2,
                  w13_zero_points=z13, w2_zero_points=z2, mode="w4a16")
    want, mag, hround = moe_reference(x, w13, w2, b13, b2, ids, weights, act)
    tol = 1e-4 * mag + 1e-5
    if dtype == torch.bfloat16:
        tol = tol + bf16_ulp(want) + hround
    diff = (out.double() - want).abs()
    assert torch.all(diff <= tol), f"max diff {diff.max().item():.3g}"


@pytest.mark.parametrize("act_quant", ["per_token", "per_group"])
def test_da8w4_skip_weighted_and_int64_ids(act_quant):
    w13, w2 = _experts(False)
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(9, H).bfloat16()
    ids = torch.stack([torch.randperm(E)[:2] for _ in range(9)])  # int64
    out = torch.zeros(9, H, dtype=torch.bfloat16)
    OPS.fused_moe(out, x, p13, p2, None, None, torch.empty(0), ids, True,
                  "silu", s13, s2, mode="da8w4", act_quant=act_quant)
    want, mag, _ = moe_reference(x, w13, w2, None, None, ids, None, "silu")
    # DA8W4 quantizes x and the intermediate to int8 (numerics.md): a few
    # percent of the terms' magnitude.
    diff = (out.double() - want).abs()
    assert torch.all(diff <= 0.03 * mag + bf16_ulp(want) + 1e-3)


def test_da8w4_per_group_scales_follow_outlier_channels():
    """x's first channel group 100x the rest, with w13's weights for it zero:
    the result depends only on the ordinary channels, which per-token scales
    round to a few levels (the int8 range spent on the outliers) and
    per-group scales keep (the reason hosts ask for them)."""
    w13, w2 = _experts(False)
    for _, s, _ in w13:
        s[0].zero_()  # scales [G, 2I]: group 0 contributes nothing
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(16, H)
    x[:, :GS] *= 100.0
    ids = torch.stack([torch.randperm(E)[:2] for _ in range(16)]).int()
    weights = torch.rand(16, 2)
    want, _, _ = moe_reference(x, w13, w2, None, None, ids, weights, "silu")
    errors = {}
    for act_quant in ("per_token", "per_group"):
        out = torch.zeros(16, H)
        OPS.fused_moe(out, x, p13, p2, None, None, weights, ids, False,
                      "silu", s13, s2, mode="da8w4", act_quant=act_quant)
        errors[act_quant] = ((out.double() - want).norm() /
                             want.norm()).item()
    assert errors["per_group"] < 0.3 * errors["per_token"], errors


def test_errors_name_the_value():
    w13, w2 = _experts(False)
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(2, H)
    out = torch.zeros(2, H)
    w = torch.ones(2, 1)
    with pytest.raises(RuntimeError, match=r"topk_ids\[1, 0\] = 6"):
        OPS.fused_moe(out, x, p13, p2, None, None, w,
                      torch.tensor([[0], [6]], dtype=torch.int32), False,
                      "silu", s13, s2)
    assert torch.all(out == 0)
    with pytest.raises(RuntimeError, match="act = 'relu'"):
        OPS.fused_moe(out, x, p13, p2, None, None, w,
                      torch.zeros(2, 1, dtype=torch.int32), False, "relu",
                      s13, s2)
    with pytest.raises(RuntimeError,
                       match="act_quant = per_group quantizes DA8W4.*w4a16"):
        OPS.fused_moe(out, x, p13, p2, None, None, w,
                      torch.zeros(2, 1, dtype=torch.int32), False, "silu",
                      s13, s2, act_quant="per_group")
    with pytest.raises(RuntimeError, match="act_quant 'per_row'"):
        OPS.fused_moe(out, x, p13, p2, None, None, w,
                      torch.zeros(2, 1, dtype=torch.int32), False, "silu",
                      s13, s2, mode="da8w4", act_quant="per_row")
    with pytest.raises(RuntimeError, match="w13_scales and w2_scales"):
        OPS.fused_moe(out, x, p13, p2, None, None, w,
                      torch.zeros(2, 1, dtype=torch.int32), False, "silu")


def _vllm_tensors(act, container, t=7, k=4, bias_dtype=torch.bfloat16):
    """What vLLM's ZentorchExpertsInt4.apply() hands zentorch_fused_moe:
    bf16 hidden states, zentorch-repacked s4 experts (int32 [E, N, K/8] or
    the same bytes as int8 [E, N, K/2]), bf16 scales [E, G, N], biases
    [E, 2I] / [E, H], f32 routing weights, int32 ids. For swigluoai w13's
    rows are interleaved (gate, up, ...): the reference reads them so."""
    w13, w2 = _experts(False)
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    if container == "int8":
        p13, p2 = p13.view(torch.int8), p2.view(torch.int8)
    s13, s2 = s13.bfloat16(), s2.bfloat16()
    # The reference must see the bf16 scales the op sees.
    w13 = [(q, s.bfloat16().float(), z) for q, s, z in w13]
    w2 = [(q, s.bfloat16().float(), z) for q, s, z in w2]
    b13 = (torch.randn(E, 2 * I) * 0.1).to(bias_dtype)
    b2 = (torch.randn(E, H) * 0.1).to(bias_dtype)
    x = torch.randn(t, H).bfloat16()
    ids = torch.stack([torch.randperm(E)[:k] for _ in range(t)]).int()
    weights = torch.softmax(torch.randn(t, k), dim=-1)
    return x, (p13, p2, b13, b2, weights, ids, s13, s2), (w13, w2)


@pytest.mark.parametrize("act", MOE_GATES)
@pytest.mark.parametrize("container", ["int32", "int8"])
@pytest.mark.parametrize("bias_dtype", [torch.bfloat16, torch.float32])
def test_vllm_call_computes_zentorchs_da8w4(act, container, bias_dtype):
    """vLLM's call, positionally as ZentorchExpertsInt4.apply() makes it with
    the op's namespace replaced, computes zentorch's numerics class: DA8W4
    with per-token activation scales (the float64 DA8W4 MoE reference), bit
    for bit what mode="da8w4" gives."""
    hidden_states, (w1, w2, w1_bias, w2_bias, topk_weights, topk_ids,
                    w1_scale, w2_scale), (r13, r2) = _vllm_tensors(
        act, container, bias_dtype=bias_dtype)
    output = torch.empty_like(hidden_states)
    torch.ops.w4jit.fused_moe(
        output, hidden_states, w1, w2, w1_bias, w2_bias, topk_weights,
        topk_ids, False, str(act).lower(), w1_scale, w2_scale)
    want, mag, flip = moe_da8w4_reference(
        hidden_states, r13, r2, w1_bias, w2_bias, topk_ids, topk_weights, act)
    diff = (output.double() - want).abs()
    tol = 1e-4 * mag + flip + bf16_ulp(want) + 1e-6
    assert torch.all(diff <= tol), f"max diff {diff.max().item():.3g}"
    # A W4A16 result would differ by DA8W4's quantization: the test can
    # tell the classes apart.
    w4a16, _, _ = moe_reference(hidden_states, r13, r2, w1_bias, w2_bias,
                                topk_ids, topk_weights, act)
    assert (w4a16 - want).abs().max() > diff.max()
    explicit = torch.empty_like(hidden_states)
    OPS.fused_moe(explicit, hidden_states, w1, w2, w1_bias, w2_bias,
                  topk_weights, topk_ids, False, act, w1_scale, w2_scale,
                  mode="da8w4", act_quant="per_token")
    assert torch.equal(output, explicit)


def test_int8_and_int32_containers_are_the_same_nibbles():
    x, (p13, p2, b13, b2, w, ids, s13, s2), _ = _vllm_tensors("silu", "int32")
    outs = []
    for a13, a2 in ((p13, p2), (p13.view(torch.int8), p2.view(torch.int8)),
                    (p13.view(torch.uint8), p2)):
        out = torch.empty_like(x)
        OPS.fused_moe(out, x, a13, a2, b13, b2, w, ids, False, "swigluoai",
                      s13, s2)
        outs.append(out)
    assert torch.equal(outs[0], outs[1]) and torch.equal(outs[0], outs[2])
    with pytest.raises(RuntimeError, match=r"w13 has shape \[6, 128, 32\]"):
        OPS.fused_moe(torch.empty_like(x), x, p13.view(torch.int8)[..., :32],
                      p2, b13, b2, w, ids, False, "silu", s13, s2)


def test_f32_input_defaults_to_w4a16():
    """zentorch refuses f32 input; fused_moe's default gives W4A16 for it
    (x kept in f32: the accuracy an f32 host asks for), bit for bit
    mode="w4a16"."""
    w13, w2 = _experts(False)
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(5, H)
    ids = torch.stack([torch.randperm(E)[:2] for _ in range(5)]).int()
    weights = torch.rand(5, 2)
    outs = {}
    for mode in ("auto", "w4a16", "da8w4"):
        out = torch.empty(5, H)
        kw = {} if mode == "auto" else {"mode": mode}
        OPS.fused_moe(out, x, p13, p2, None, None, weights, ids, False,
                      "swigluoai", s13, s2, **kw)
        outs[mode] = out
    assert torch.equal(outs["auto"], outs["w4a16"])
    assert not torch.equal(outs["auto"], outs["da8w4"])
    want, mag, _ = moe_reference(x, w13, w2, None, None, ids, weights,
                                 "swigluoai")
    assert torch.all((outs["auto"].double() - want).abs() <= 1e-4 * mag + 1e-5)


@pytest.mark.parametrize("mode", ["w4a16", "da8w4"])
def test_swigluoai_constants_and_clamps(mode):
    """Gate and up values well past the limit (large scales): the clamps
    decide the result; other alpha / limit values than gpt-oss's are used."""
    w13, w2 = _experts(False)
    w13 = [(q, s * 40, z) for q, s, z in w13]
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(6, H)
    ids = torch.stack([torch.randperm(E)[:3] for _ in range(6)]).int()
    weights = torch.rand(6, 3)
    for alpha, limit in ((1.702, 7.0), (0.5, 2.5), (-1.0, 30.0)):
        out = torch.empty(6, H)
        OPS.fused_moe(out, x, p13, p2, None, None, weights, ids, False,
                      "swigluoai", s13, s2, mode=mode, swiglu_alpha=alpha,
                      swiglu_limit=limit)
        if mode == "w4a16":
            want, mag, _ = moe_reference(x, w13, w2, None, None, ids,
                                         weights, "swigluoai", alpha, limit)
            tol = 1e-4 * mag + 1e-5
        else:
            want, mag, flip = moe_da8w4_reference(
                x, w13, w2, None, None, ids, weights, "swigluoai", alpha,
                limit)
            tol = 1e-4 * mag + flip + 1e-5
        diff = (out.double() - want).abs()
        assert torch.all(diff <= tol), (alpha, limit, diff.max().item())
    with pytest.raises(RuntimeError, match="swiglu_limit = 0"):
        OPS.fused_moe(torch.empty(6, H), x, p13, p2, None, None, weights, ids,
                      False, "swigluoai", s13, s2, swiglu_limit=0.0)


def test_layers_are_cached_rebuilt_and_cleared_with_the_linear_ones():
    """fused_moe keeps its layers in the ops' cache (layer_cache.h): a second
    call with the same tensors reuses the layer, an in-place change to a
    weight rebuilds it and replaces the stale entry, freeing the weights
    drops it, and _clear_cache empties it."""
    OPS._clear_cache()
    w13, w2 = _experts(False)
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(3, H)
    ids = torch.tensor([[0, 1], [2, 3], [4, 5]], dtype=torch.int32)
    weights = torch.rand(3, 2)

    def run():
        out = torch.empty(3, H)
        OPS.fused_moe(out, x, p13, p2, None, None, weights, ids, False,
                      "silu", s13, s2)
        return out

    first = run()
    assert OPS._cache_size() == 1
    assert torch.equal(run(), first)
    assert OPS._cache_size() == 1
    s2.mul_(2.0)  # in place: the layer must be rebuilt, not served stale
    assert torch.allclose(run(), 2 * first, rtol=1e-5, atol=1e-6)
    assert OPS._cache_size() == 1  # the stale entry replaced
    del p13, p2, s13, s2
    assert OPS._cache_size() == 0
    OPS._clear_cache()
    assert OPS._cache_size() == 0


def _functionalize():
    """torch.func.functionalize (torch 2.x) or functorch's (1.13)."""
    func = getattr(torch, "func", None)
    if func is not None and hasattr(func, "functionalize"):
        return func.functionalize
    try:
        from functorch import functionalize
    except ImportError:
        return None
    return functionalize


@pytest.mark.parametrize("mode", ["auto", "w4a16", "da8w4"])
def test_functionalized_fused_moe_calls_its_twin(mode):
    # fused_moe's own Functionalize kernel (torch/moe_ops.cc): the traced
    # graph calls fused_moe_functional and copies into output, never the
    # mutable op, and gives the eager result; on torch 1.13 and 2.x alike.
    functionalize = _functionalize()
    if functionalize is None:
        pytest.skip(f"torch {torch.__version__} has no functionalize")
    from torch.fx.experimental.proxy_tensor import make_fx
    w13, w2 = _experts(False)
    p13, s13, _ = _stack(w13)
    p2, s2, _ = _stack(w2)
    x = torch.randn(5, H).bfloat16()
    ids = torch.stack([torch.randperm(E)[:2] for _ in range(5)]).int()
    weights = torch.rand(5, 2)

    def f(out, x, ids, weights):
        OPS.fused_moe(out, x, p13, p2, None, None, weights, ids, False,
                      "silu", s13, s2, mode=mode)
        return out

    want = f(torch.zeros_like(x), x, ids, weights)
    got = functionalize(f)(torch.zeros_like(x), x, ids, weights)
    assert torch.equal(got, want)
    gm = make_fx(functionalize(f, remove="mutations_and_views"))(
        torch.zeros_like(x), x, ids, weights)
    targets = [str(n.target) for n in gm.graph.nodes
               if n.op == "call_function"]
    assert "w4jit.fused_moe_functional.default" in targets, targets
    assert "w4jit.fused_moe.default" not in targets, targets
    assert torch.equal(gm(torch.zeros_like(x), x, ids, weights), want)
    # The twin itself: the result in a new tensor, the same values.
    assert torch.equal(
        OPS.fused_moe_functional(x, p13, p2, None, None, weights, ids, False,
                                 "silu", s13, s2, mode=mode), want)
