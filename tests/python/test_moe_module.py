"""torch.classes.w4jit.MoE and the w4jit.MoE module: built from every
checkpoint format, stacked [E, ...] and per-expert lists, both modes,
against the float64 MoE composition; bad input raises naming the value."""
import pytest
import torch

import w4jit
from w4jit import formats
from reference import (MOE_ACTS, MOE_GATES, bf16_ulp, moe_reference,
                       random_layer)

OPS = torch.ops.w4jit
E, H, I, GS = 6, 128, 64, 32
FORMATS = ["compressed_tensors", "gptq_v1", "gptq_v2", "awq",
           "unpacked_int8", "zentorch_int32"]


def _experts(u4, group_size=GS, scale_dtype=torch.float32):
    """Per expert: (q int8 [N, K], scales [G, N], zeros [G, N] or None)
    of w13 (2I x H) and w2 (H x I)."""
    w13 = [random_layer(2 * I, H, group_size, u4, scale_dtype)
           for _ in range(E)]
    w2 = [random_layer(H, I, group_size, u4, scale_dtype) for _ in range(E)]
    return w13, w2


def _pack(fmt, layer):
    """One expert's projection in `fmt`: (qweight, scales, zero points)."""
    q, s, z = layer
    if fmt == "compressed_tensors":
        return formats.pack_compressed_tensors(q, s, z)
    if fmt in ("gptq_v1", "gptq_v2"):
        qweight, qzeros, scales = formats.pack_gptq(q, s, z, int(fmt[-1]))
        return qweight, scales, qzeros
    if fmt == "awq":
        qweight, qzeros, scales = formats.pack_awq(q, s, z)
        return qweight, scales, qzeros
    if fmt == "zentorch_int32":
        return formats.repack_int32(q), s, z
    return q, s, z  # unpacked_int8


def _tensors(fmt, layers, stacked):
    """(qweight, scales, zero points) of every expert: stacked [E, ...]
    tensors or per-expert lists."""
    packed = [_pack(fmt, layer) for layer in layers]
    out = []
    for i in range(3):
        parts = [p[i] for p in packed]
        if parts[0] is None:
            out.append(None)
        else:
            out.append(torch.stack(parts) if stacked else parts)
    return out


def _build(fmt, w13, w2, stacked, **kw):
    q13, s13, z13 = _tensors(fmt, w13, stacked)
    q2, s2, z2 = _tensors(fmt, w2, stacked)
    return w4jit.MoE.from_checkpoint(fmt, q13, s13, q2, s2,
                                     w13_zero_points=z13, w2_zero_points=z2,
                                     **kw)


def _routing(t, k, skewed=False):
    ids = torch.stack([torch.randperm(E)[:k] for _ in range(t)]).int()
    if skewed:  # expert 0 in every token
        ids[:, 0] = 0
        for r in range(t):
            rest = [e for e in torch.randperm(E).tolist() if e != 0]
            ids[r, 1:] = torch.tensor(rest[:k - 1])
    return ids, torch.rand(t, k)


def _check(y, want, mag, dtype, mode, hround=0.0):
    assert y.shape == want.shape and y.dtype == dtype
    if mode == "w4a16":
        tol = 1e-4 * mag + 1e-5
    else:
        # DA8W4 quantizes x and the intermediate to int8 (numerics.md): a
        # few percent of the terms' magnitude.
        tol = 0.03 * mag + 1e-3
    if dtype == torch.bfloat16:
        tol = tol + bf16_ulp(want)
    tol = tol + hround
    diff = (y.double() - want).abs()
    assert torch.all(diff <= tol), (
        f"max diff {diff.max().item():.3g}, at tol "
        f"{tol.flatten()[diff.argmax()].item():.3g}")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("stacked", [True, False],
                         ids=["stacked", "per_expert"])
@pytest.mark.parametrize("mode", ["w4a16", "da8w4"])
@pytest.mark.parametrize("u4", [False, True], ids=["s4", "u4"])
def test_every_format_matches_reference(fmt, stacked, mode, u4):
    w13, w2 = _experts(u4, scale_dtype=torch.bfloat16)
    moe = _build(fmt, w13, w2, stacked, mode=mode)
    assert (moe.experts, moe.hidden, moe.intermediate) == (E, H, I)
    assert moe.group_size == GS and moe.mode == mode
    assert moe.packed_bytes() == E * moe.expert_packed_bytes() > 0
    assert moe.kernel_names()
    x = torch.randn(7, H).bfloat16()
    ids, weights = _routing(7, 2, skewed=stacked)
    y = moe(x, ids, weights)
    want, mag, hround = moe_reference(x, w13, w2, None, None, ids, weights,
                                      "silu")
    _check(y, want, mag, torch.bfloat16, mode, hround)


@pytest.mark.parametrize("act", MOE_GATES)
def test_activations_biases_f32_and_unweighted(act):
    w13, w2 = _experts(True, group_size=-1)
    b13 = torch.randn(E, 2 * I) * 0.1
    b2 = torch.randn(E, H).bfloat16()  # any float dtype; held as f32
    moe = _build("compressed_tensors", w13, w2, True, w13_bias=b13,
                 w2_bias=b2, activation=act, dtype=torch.float32)
    assert moe.activation == act and moe.group_size == -1
    x = torch.randn(33, H)
    ids, weights = _routing(33, 4)
    want, mag, hround = moe_reference(x, w13, w2, b13, b2, ids, weights, act)
    _check(moe(x, ids.long(), weights.double()), want, mag, torch.float32,
           "w4a16")
    want, mag, hround = moe_reference(x, w13, w2, b13, b2, ids, None, act)
    _check(moe(x, ids, None), want, mag, torch.float32, "w4a16", hround)


def test_da8w4_per_group_activation_scales():
    w13, w2 = _experts(False)
    moe = _build("gptq_v2", w13, w2, False, mode="da8w4",
                 act_quant="per_group")
    assert moe.act_quant == "per_group"
    x = torch.randn(5, H).bfloat16()
    ids, weights = _routing(5, 3)
    want, mag, hround = moe_reference(x, w13, w2, None, None, ids, weights,
                                      "silu")
    _check(moe(x, ids, weights), want, mag, torch.bfloat16, "da8w4", hround)


def test_act_order_g_idx_per_expert():
    """GPTQ act-order: each expert's g_idx permutes its input channels."""
    w13, w2 = _experts(True)
    perm13 = [torch.randperm(H) for _ in range(E)]
    perm2 = [torch.randperm(I) for _ in range(E)]
    g13 = torch.stack([(p // GS).int() for p in perm13])
    g2 = torch.stack([(p // GS).int() for p in perm2])
    moe = _build("gptq_v1", w13, w2, True, w13_g_idx=g13, w2_g_idx=g2)
    x = torch.randn(4, H).bfloat16()
    ids, weights = _routing(4, 2)
    # Channel k belongs to group g_idx[k]: the dense weights of a layer
    # whose group structure is in permuted order.
    def dense(layers, gidx):
        out = []
        for (q, s, z), g in zip(layers, gidx):
            g = g.long()
            zz = None if z is None else z[g].t()
            out.append((q, s, zz, g))
        return out

    def deq(q, s, zt, g):
        w = q.double()
        if zt is not None:
            w = w - zt.double()
        return w * s.double()[g].t()

    y = moe(x, ids, weights)
    d13 = [deq(*a) for a in dense(w13, g13)]
    d2 = [deq(*a) for a in dense(w2, g2)]
    want = torch.zeros(4, H, dtype=torch.float64)
    mag = torch.zeros(4, H, dtype=torch.float64)
    hround = torch.zeros(4, H, dtype=torch.float64)  # the bf16 intermediate
    for t in range(4):
        for j in range(2):
            e = int(ids[t, j])
            gu = d13[e] @ x[t].double()
            h = MOE_ACTS["silu"](gu[:I]) * gu[I:]
            o = d2[e] @ h
            want[t] += float(weights[t, j]) * o
            mag[t] += float(weights[t, j]) * (d2[e].abs() @ h.abs() + o.abs())
            hround[t] += float(weights[t, j]) * (
                d2[e].abs() @ (bf16_ulp(h) / 2))
    _check(y, want, mag, torch.bfloat16, "w4a16", hround)


def test_same_bits_as_fused_moe_and_empty_batch():
    w13, w2 = _experts(True)
    q13, s13, z13 = _tensors("zentorch_int32", w13, True)
    q2, s2, z2 = _tensors("zentorch_int32", w2, True)
    moe = w4jit.MoE.from_zentorch(q13, s13, q2, s2, z13, z2)
    x = torch.randn(64, 2 * H).bfloat16()[:, :H]  # rows 2H apart, in place
    ids, weights = _routing(64, 2, skewed=True)
    out = torch.empty(64, H, dtype=torch.bfloat16)
    OPS.fused_moe(out, x, q13, q2, None, None, weights, ids, False, "silu",
                  s13, s2, w13_zero_points=z13, w2_zero_points=z2)
    assert torch.equal(moe(x, ids, weights), out)
    empty = moe(torch.empty(0, H).bfloat16(), torch.empty(0, 2).int(),
                torch.empty(0, 2))
    assert empty.shape == (0, H)


@pytest.mark.parametrize("container", ["int32", "int8"])
def test_swigluoai_from_zentorch_same_bits_as_fused_moe(container):
    """gpt-oss's experts as vLLM holds them (interleaved w13 rows, biases,
    zentorch's int32 words or the same bytes as int8) through w4jit.MoE
    and fused_moe with mode="da8w4": the same bits; other constants are
    kept and reported."""
    w13, w2 = _experts(False, scale_dtype=torch.bfloat16)
    q13, s13, _ = _tensors("zentorch_int32", w13, True)
    q2, s2, _ = _tensors("zentorch_int32", w2, True)
    if container == "int8":
        q13, q2 = q13.view(torch.int8), q2.view(torch.int8)
    b13 = (torch.randn(E, 2 * I) * 0.1).bfloat16()
    b2 = (torch.randn(E, H) * 0.1).bfloat16()
    x = torch.randn(9, H).bfloat16()
    ids, weights = _routing(9, 4)
    for alpha, limit in ((1.702, 7.0), (0.5, 1.5)):
        moe = w4jit.MoE.from_zentorch(
            q13, s13, q2, s2, mode="da8w4", activation="swigluoai",
            w13_bias=b13, w2_bias=b2, swiglu_alpha=alpha, swiglu_limit=limit)
        assert moe.activation == "swigluoai"
        assert (moe.swiglu_alpha, moe.swiglu_limit) == pytest.approx(
            (alpha, limit))
        out = torch.empty(9, H, dtype=torch.bfloat16)
        OPS.fused_moe(out, x, q13, q2, b13, b2, weights, ids, False,
                      "swigluoai", s13, s2, mode="da8w4", swiglu_alpha=alpha,
                      swiglu_limit=limit)
        assert torch.equal(moe(x, ids, weights), out)
        want, mag, _ = moe_reference(x, w13, w2, b13, b2, ids, weights,
                                     "swigluoai", alpha, limit)
        _check(out, want, mag, torch.bfloat16, "da8w4")


def test_outlives_its_source_tensors():
    w13, w2 = _experts(False)
    q13, s13, _ = _tensors("compressed_tensors", w13, True)
    q2, s2, _ = _tensors("compressed_tensors", w2, True)
    moe = w4jit.MoE.from_compressed_tensors(q13, s13, q2, s2)
    x = torch.randn(3, H).bfloat16()
    ids, weights = _routing(3, 2)
    before = moe(x, ids, weights)
    q13.zero_()
    s13.fill_(float("nan"))
    del q13, s13, q2, s2
    assert torch.equal(moe(x, ids, weights), before)


def _good():
    w13, w2 = _experts(False)
    q13, s13, _ = _tensors("compressed_tensors", w13, True)
    q2, s2, _ = _tensors("compressed_tensors", w2, True)
    return dict(fmt="compressed_tensors", w13_qweight=q13, w13_scales=s13,
                w2_qweight=q2, w2_scales=s2)


BUILD_BAD = [
    (dict(fmt="safetensors"), ValueError, "unknown format 'safetensors'"),
    (dict(mode="w8a8"), RuntimeError, "mode 'w8a8'"),
    (dict(activation="relu"), RuntimeError, "activation = 'relu'"),
    (dict(act_quant="per_row"), RuntimeError, "act_quant 'per_row'"),
    (dict(dtype=torch.float16), ValueError, "dtype torch.float16"),
    (dict(group_size=48), RuntimeError, "group_size = 48"),
    (dict(w2_qweight=lambda g: g["w2_qweight"][:5]), RuntimeError,
     "w2_qweight has 5 expert tensors but w13_qweight has 6"),
    (dict(w2_qweight=lambda g: g["w2_qweight"][:, :, :4],
          w2_scales=lambda g: g["w2_scales"][:, :, :1]), RuntimeError,
     "expert 0 w2 is N = 128, K = 32 but must be N = H = 128, K = I = 64"),
    (dict(w13_scales=lambda g: [s.half() if e == 3 else s for e, s in
                                enumerate(g["w13_scales"])]),
     RuntimeError, "expert 3 w13 scales are f16"),
    (dict(w13_scales=lambda g: g["w13_scales"][:, :-1]), RuntimeError,
     "expert 0 w13: scales has shape"),
    (dict(w13_qweight=lambda g: g["w13_qweight"][0]), ValueError,
     "w13_qweight has shape (128, 16); stacked experts need 3 dims"),
    (dict(w13_qweight=lambda g: [g["w13_qweight"][0], 3]), TypeError,
     "w13_qweight[1] is a int"),
    (dict(w13_zero_points=lambda g: torch.zeros(E, 2 * I // 8, H // GS,
                                                dtype=torch.int32)),
     RuntimeError, "zero points for both projections"),
    (dict(w13_g_idx=lambda g: torch.zeros(E, H, dtype=torch.int32)),
     RuntimeError, f"expert 0 w13: g_idx gives group 0 {H} members"),
]


@pytest.mark.parametrize("over,exc,needle", BUILD_BAD,
                         ids=[n for _, _, n in BUILD_BAD])
def test_bad_construction_raises_naming_the_value(over, exc, needle):
    g = _good()
    kw = dict(g)
    for name, v in over.items():
        kw[name] = v(g) if callable(v) else v
    fmt = kw.pop("fmt")
    with pytest.raises(exc) as e:
        w4jit.MoE.from_checkpoint(fmt, kw.pop("w13_qweight"),
                                  kw.pop("w13_scales"), kw.pop("w2_qweight"),
                                  kw.pop("w2_scales"), **kw)
    assert needle in str(e.value), str(e.value)


def test_bad_forward_raises_naming_the_value():
    g = _good()
    moe = w4jit.MoE.from_compressed_tensors(
        g["w13_qweight"], g["w13_scales"], g["w2_qweight"], g["w2_scales"])
    x = torch.randn(2, H).bfloat16()
    ids = torch.zeros(2, 2, dtype=torch.int32)
    w = torch.ones(2, 2)
    cases = [
        ((x.float(), ids, w), "x has dtype Float but must be BFloat16"),
        ((x[:, :64], ids, w), "dim 1 is 64 but must be 128"),
        ((x[0], ids, w), "x has shape [128] (1 dims) but must have 2"),
        ((x, ids[:1], w), "topk_ids has shape [1, 2]: dim 0 is 1"),
        ((x, ids.float(), w), "topk_ids has dtype Float"),
        ((x, torch.tensor([[0, 1], [6, 2]], dtype=torch.int32), w),
         "topk_ids[1, 0] = 6 is not an expert id in [0, 6)"),
        ((x, torch.tensor([[0, 1], [2, 2**32 + 1]]), w),
         f"topk_ids[1, 1] = {2**32 + 1} is not an expert id"),
        ((x, torch.tensor([[0, 1], [-1, 2]]), w), "topk_ids[1, 0] = -1"),
        ((x, ids, w[:, :1]), "topk_weights has shape [2, 1]: dim 1 is 1"),
        ((x, ids, torch.tensor([[1.0, 1.0], [float("nan"), 1.0]])),
         "topk_weights[1, 0] = nan"),
        ((x, ids[:, :0], w[:, :0]), "k = 0"),
    ]
    for args, needle in cases:
        with pytest.raises(RuntimeError) as e:
            moe(*args)
        assert "w4jit.MoE" in str(e.value) and needle in str(e.value), (
            needle, str(e.value))


def test_named_constructors_match_from_checkpoint():
    w13, w2 = _experts(True)
    x = torch.randn(6, H).bfloat16()
    ids, weights = _routing(6, 2)
    want = _build("awq", w13, w2, True)(x, ids, weights)
    for fmt, make in [
        ("compressed_tensors", lambda q13, s13, z13, q2, s2, z2:
         w4jit.MoE.from_compressed_tensors(q13, s13, q2, s2, z13, z2)),
        ("gptq_v2", lambda q13, s13, z13, q2, s2, z2:
         w4jit.MoE.from_gptq(q13, z13, s13, q2, z2, s2, version=2)),
        ("awq", lambda q13, s13, z13, q2, s2, z2:
         w4jit.MoE.from_awq(q13, z13, s13, q2, z2, s2)),
        ("unpacked_int8", lambda q13, s13, z13, q2, s2, z2:
         w4jit.MoE.from_unpacked(q13, s13, q2, s2, z13, z2)),
    ]:
        q13, s13, z13 = _tensors(fmt, w13, False)
        q2, s2, z2 = _tensors(fmt, w2, False)
        got = make(q13, s13, z13, q2, s2, z2)(x, ids, weights)
        assert torch.equal(got, want), fmt
    # [E, N, G] scales and zero points (groups_major=False).
    q13, s13, z13 = _tensors("unpacked_int8", w13, True)
    q2, s2, z2 = _tensors("unpacked_int8", w2, True)
    t = lambda a: a.transpose(1, 2).contiguous()  # noqa: E731
    moe = w4jit.MoE.from_unpacked(q13, t(s13), q2, t(s2), t(z13), t(z2),
                                  groups_major=False)
    assert moe.group_size == GS
    assert torch.equal(moe(x, ids, weights), want)
