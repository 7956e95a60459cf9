"""non_finite ("error" / "propagate", w4jit::NonFinitePolicy) in the
torch ops and the modules: the linear ops and w4jit.Linear propagate by
default (a row of x holding NaN / Inf gives a non-finite row, the other
rows as without it) and raise naming the element with "error";
fused_moe and w4jit.MoE raise by default and, with "propagate", give a
token with a non-finite routing weight, a non-finite x row or an expert id
outside [0, E) (int32 or int64) a NaN row, the other tokens as without it.
"""
import pytest
import torch

import w4jit
from reference import random_layer

OPS = torch.ops.w4jit
E, H, I, GS = 6, 128, 64, 32
N, K = 48, 128
NAN, INF = float("nan"), float("inf")


def _linear_args(u4=True):
    q, s, z = random_layer(N, K, GS, u4)
    return OPS.woq_repack_weight(q).t(), s, z


def _bad_x(dtype):
    x = torch.randn(5, K).to(dtype)
    x[1, 3] = NAN
    x[3, K - 1] = -INF
    return x


def _check_rows(y, clean, bad_rows):
    for r in range(y.shape[0]):
        if r in bad_rows:
            assert not torch.isfinite(y[r]).any(), r
        else:
            assert torch.equal(y[r], clean[r]), r


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_woq_linear_propagates_by_default_and_errors_when_asked(dtype):
    w, s, z = _linear_args()
    x = _bad_x(dtype)
    clean = OPS.woq_linear(torch.where(torch.isfinite(x), x,
                                       torch.zeros_like(x)), w, s, z)
    y = OPS.woq_linear(x, w, s, z)
    _check_rows(y, clean, {1, 3})
    assert torch.equal(OPS.woq_linear(x, w, s, z, non_finite="propagate")
                       .nan_to_num(), y.nan_to_num())
    with pytest.raises(RuntimeError, match=r"x\[1, 3\] = nan is not finite"):
        OPS.woq_linear(x, w, s, z, non_finite="error")
    out = torch.full((5, N), 7.0, dtype=dtype)
    with pytest.raises(RuntimeError, match=r"x\[1, 3\] = nan"):
        OPS.woq_linear.out(x, w, s, z, None, "", non_finite="error", out=out)
    assert torch.all(out == 7.0)
    # Finite x: "error" runs and gives the same result.
    xf = torch.randn(3, K).to(dtype)
    assert torch.equal(OPS.woq_linear(xf, w, s, z, non_finite="error"),
                       OPS.woq_linear(xf, w, s, z))
    with pytest.raises(RuntimeError, match="non_finite 'ignore' is not "
                       "error or propagate"):
        OPS.woq_linear(xf, w, s, z, non_finite="ignore")


def test_epilogue_ops_and_dynamic_qlinear_take_non_finite():
    w, s, z = _linear_args()
    x = _bad_x(torch.bfloat16)
    a = torch.randn(5, N).bfloat16()
    for call in (
            lambda nf: OPS.woq_linear_relu(x, w, s, z, non_finite=nf),
            lambda nf: OPS.woq_linear_add(x, w, s, z, a, non_finite=nf),
            lambda nf: OPS.woq_linear_mul_add(x, w, s, z, a, a,
                                              non_finite=nf),
            lambda nf: OPS.woq_linear_silu_mul(x, w, s, z, non_finite=nf)):
        y = call("propagate")
        assert not torch.isfinite(y[1]).any() and torch.isfinite(y[0]).all()
        with pytest.raises(RuntimeError, match=r"x\[1, 3\] = nan"):
            call("error")
    qs, ss, _ = random_layer(N, K, GS, False)
    packed = OPS.woq_repack_weight(qs)
    y = OPS.dynamic_qlinear(x, packed, ss)
    assert not torch.isfinite(y[3]).any() and torch.isfinite(y[4]).all()
    with pytest.raises(RuntimeError, match=r"x\[1, 3\] = nan"):
        OPS.dynamic_qlinear(x, packed, ss, non_finite="error")
    out = torch.empty(5, N, dtype=torch.bfloat16)
    with pytest.raises(RuntimeError, match=r"x\[1, 3\] = nan"):
        OPS.dynamic_qlinear.out(x, packed, ss, non_finite="error", out=out)


@pytest.mark.parametrize("mode", ["w4a16", "da8w4"])
def test_linear_module(mode):
    q, s, _ = random_layer(N, K, GS, False)
    x = _bad_x(torch.bfloat16)
    lin = w4jit.Linear.from_unpacked(q, s, mode=mode)
    assert lin.non_finite == "propagate" and "non_finite=propagate" in repr(
        lin)
    y = lin(x)
    assert not torch.isfinite(y[1]).any() and torch.isfinite(y[2]).all()
    strict = w4jit.Linear.from_unpacked(q, s, mode=mode, non_finite="error")
    assert strict.non_finite == "error"
    with pytest.raises(RuntimeError, match=r"x\[1, 3\] = nan"):
        strict(x)
    assert torch.equal(strict(x[[0, 2, 4]]), y[[0, 2, 4]])
    with pytest.raises(RuntimeError, match="non_finite 'nan'"):
        w4jit.Linear.from_unpacked(q, s, non_finite="nan")


def _stacked_experts():
    w13 = [random_layer(2 * I, H, GS, False) for _ in range(E)]
    w2 = [random_layer(H, I, GS, False) for _ in range(E)]
    stack = lambda layers: (  # noqa: E731
        torch.stack([OPS.woq_repack_weight(q) for q, _, _ in layers]),
        torch.stack([s for _, s, _ in layers]))
    return stack(w13), stack(w2)


def _bad_routing(t=6, k=2, id_dtype=torch.int32):
    x = torch.randn(t, H)
    ids = torch.stack([torch.randperm(E)[:k] for _ in range(t)]).to(id_dtype)
    w = torch.rand(t, k)
    w[1, 1] = NAN
    ids[2, 0] = E if id_dtype == torch.int32 else (1 << 32) + 1
    x[4, 9] = INF
    return x, ids, w, {1, 2, 4}


def _check_moe(y, y_good, bad, t):
    good = [r for r in range(t) if r not in bad]
    for r in bad:
        assert torch.isnan(y[r]).all(), r
    assert torch.equal(y[good], y_good)


@pytest.mark.parametrize("id_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("mode", ["w4a16", "da8w4"])
def test_fused_moe(id_dtype, mode):
    (p13, s13), (p2, s2) = _stacked_experts()
    x, ids, w, bad = _bad_routing(id_dtype=id_dtype)
    out = torch.full_like(x, 5.0)
    # int32 ids: the C++ check goes slot by slot, and meets the NaN weight
    # first; int64 ids are checked (before narrowing) first.
    with pytest.raises(RuntimeError, match=r"topk_weights\[1, 1\] = nan"
                       if id_dtype == torch.int32 else r"topk_id\[2, 0\] = "):
        OPS.fused_moe(out, x, p13, p2, None, None, w, ids, False, "silu",
                      s13, s2, mode=mode)
    assert torch.all(out == 5.0)
    OPS.fused_moe(out, x, p13, p2, None, None, w, ids, False, "silu", s13,
                  s2, mode=mode, non_finite="propagate")
    good = [r for r in range(x.shape[0]) if r not in bad]
    y_good = torch.empty(len(good), H)
    OPS.fused_moe(y_good, x[good], p13, p2, None, None, w[good], ids[good],
                  False, "silu", s13, s2, mode=mode)
    _check_moe(out, y_good, bad, x.shape[0])
    with pytest.raises(RuntimeError, match="non_finite 'zero'"):
        OPS.fused_moe(out, x, p13, p2, None, None, w, ids, False, "silu",
                      s13, s2, non_finite="zero")


def test_moe_module():
    (p13, s13), (p2, s2) = _stacked_experts()
    x, ids, w, bad = _bad_routing()
    strict = w4jit.MoE.from_checkpoint("zentorch_int32", p13, s13, p2, s2,
                                       dtype=torch.float32)
    assert strict.non_finite == "error"
    with pytest.raises(RuntimeError, match=r"topk_weights\[1, 1\] = nan"):
        strict(x, ids, w)
    lax = w4jit.MoE.from_checkpoint("zentorch_int32", p13, s13, p2, s2,
                                    dtype=torch.float32,
                                    non_finite="propagate")
    assert lax.non_finite == "propagate" and "non_finite=propagate" in repr(
        lax)
    y = lax(x, ids, w)
    good = [r for r in range(x.shape[0]) if r not in bad]
    _check_moe(y, strict(x[good], ids[good], w[good]), bad, x.shape[0])
    # Unweighted: the weights are not read, so only ids and x count.
    y = lax(x, ids, None)
    _check_moe(y, strict(x[[0, 1, 3, 5]], ids[[0, 1, 3, 5]], None), {2, 4},
               x.shape[0])
    # int64 ids past int32 never wrap onto a valid expert.
    ids64 = ids.long()
    ids64[2, 0] = (1 << 32) + 1
    _check_moe(lax(x, ids64, w), strict(x[good], ids[good], w[good]), bad,
               x.shape[0])
