"""torch.ops.w4jit.fused_moe (zentorch's / vLLM's fused-MoE arguments) over
stacked repacked int4 experts, against a float64 torch composition."""
import pytest
import torch

import w4jit  # noqa: F401
from reference import MOE_ACTS as ACTS, bf16_ulp, moe_reference, random_layer

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
@pytest.mark.parametrize("act", list(ACTS))
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
                  w13_zero_points=z13, w2_zero_points=z2)
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
