"""The zentorch post-op family (woq_linear_relu, _sigmoid, _gelu_tanh,
_gelu_erf, _add, _mul_add, _add_add), woq_linear_silu_mul and the .out
variants, against a float64 torch composition of the plain linear."""
import pytest
import torch
import torch.nn.functional as F

import w4jit  # noqa: F401
from reference import random_layer, w4a16_reference, bf16_ulp

OPS = torch.ops.w4jit
K, GS = 128, 32


def _layer(n, u4=False, bias=True):
    q, scales, zeros = random_layer(n, K, GS, u4)
    packed = OPS.woq_repack_weight(q).t()
    b = torch.randn(n) * 0.1 if bias else None
    return q, scales, zeros, packed, b


def _tol(want, mag, dtype, gain=1.2):
    # The f32 tolerance of the linear carried through the activation (its
    # slope is at most 1.13), the vector forms' relative error, and one
    # bf16 rounding of the result.
    tol = gain * (1e-5 * mag + 1e-6) + 2e-5 * want.abs() + 1e-6
    if dtype == torch.bfloat16:
        tol = tol + bf16_ulp(want)
    return tol


def _check(got, want, tol):
    diff = (got.double() - want).abs()
    assert torch.all(diff <= tol), (
        f"max diff {diff.max().item():.3g}, at {diff.argmax().item()}")


ACTS = {
    "relu": F.relu,
    "sigmoid": torch.sigmoid,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "gelu_erf": F.gelu,
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m", [1, 3, 17, 70])
@pytest.mark.parametrize("act", list(ACTS))
def test_unary(act, m, dtype):
    n = 72
    q, s, z, packed, b = _layer(n, u4=True)
    x = torch.randn(m, K).to(dtype)
    t, mag = w4a16_reference(x, q, s, z, b)
    want = ACTS[act](t)
    op = getattr(OPS, f"woq_linear_{act}")
    got = op(x, packed, s, z, b)
    assert got.dtype == dtype and got.shape == (m, n)
    _check(got, want, _tol(want, mag, dtype))
    out = torch.empty(m, n, dtype=dtype)
    # zentorch 2.14's .out: nothing returned, the result in `out`.
    r = getattr(OPS, f"woq_linear_{act}").out(x, packed, s, z, b, out=out)
    assert r is None
    assert torch.equal(out, got)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m", [1, 4, 16, 40])
@pytest.mark.parametrize("inter", [8, 37, 100])
def test_silu_mul(inter, m, dtype):
    n = 2 * inter
    q, s, z, packed, b = _layer(n)
    x = torch.randn(m, K).to(dtype)
    t, mag = w4a16_reference(x, q, s, z, b)
    want = F.silu(t[:, :inter]) * t[:, inter:]
    got = OPS.woq_linear_silu_mul(x, packed, s, z, b)
    assert got.shape == (m, inter)
    tol = (1.2 * (1e-5 * mag[:, :inter] + 1e-6) * t[:, inter:].abs()
           + F.silu(t[:, :inter]).abs() * (1e-5 * mag[:, inter:] + 1e-6)
           + 2e-5 * want.abs() + 1e-6)
    if dtype == torch.bfloat16:
        tol = tol + bf16_ulp(want)
    _check(got, want, tol)
    out = torch.empty(m, inter, dtype=dtype)
    OPS.woq_linear_silu_mul.out(x, packed, s, z, b, out=out)
    assert torch.equal(out, got)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("m", [1, 5, 33])
def test_binary(m, dtype):
    n = 56
    q, s, z, packed, b = _layer(n)
    x = torch.randn(m, K).to(dtype)
    t, mag = w4a16_reference(x, q, s, z, b)
    a1 = torch.randn(m, n).to(dtype)
    a2 = torch.randn(m, n).to(dtype)
    cases = [
        ("add", (a1,), t + a1.double(), 1.0),
        ("mul_add", (a1, a2), t * a1.double() + a2.double(),
         a1.double().abs()),
        ("add_add", (a1, a2), t + a1.double() + a2.double(), 1.0),
    ]
    for name, operands, want, gain in cases:
        op = getattr(OPS, f"woq_linear_{name}")
        # zentorch's order: the operands, then bias.
        got = op(x, packed, s, z, *operands, b)
        _check(got, want, _tol(want, mag * gain, dtype, 1.0) + 1e-6 * 4)
        out = torch.empty(m, n, dtype=dtype)
        op.out(x, packed, s, z, *operands, b, out=out)
        assert torch.equal(out, got), name
    # zentorch's keyword, accepted and ignored.
    OPS.woq_linear_add(x, packed, s, z, a1, b, zentorch_op_name="x")


def test_out_variants_of_plain_ops():
    q, s, z, packed, b = _layer(64)
    x = torch.randn(3, K)
    out = torch.empty(3, 64)
    OPS.woq_linear.out(x, packed, s, z, b, out=out)
    assert torch.equal(out, OPS.woq_linear(x, packed, s, z, b))
    qs, ss, _ = random_layer(64, K, GS, False)
    xb = torch.randn(3, K).bfloat16()
    packed8 = OPS.woq_repack_weight(qs).view(torch.int8)
    outb = torch.empty(3, 64, dtype=torch.bfloat16)
    OPS.dynamic_qlinear.out(xb, packed8, ss, None, out=outb)
    assert torch.equal(outb, OPS.dynamic_qlinear(xb, packed8, ss, None))
    # act_quant as dynamic_qlinear takes it.
    OPS.dynamic_qlinear.out(xb, packed8, ss, None, act_quant="per_group",
                            out=outb)
    assert torch.equal(outb, OPS.dynamic_qlinear(xb, packed8, ss, None,
                                                 act_quant="per_group"))
    with pytest.raises(RuntimeError, match="act_quant 'per_row'"):
        OPS.dynamic_qlinear.out(xb, packed8, ss, None, act_quant="per_row",
                                out=outb)
    # zentorch's is_weight_prepacked: False binds, True is refused.
    OPS.dynamic_qlinear.out(xb, packed8, ss, None, is_weight_prepacked=False,
                            out=outb)
    for op in (OPS.dynamic_qlinear.out, OPS.dynamic_qlinear.default):
        kw = {"out": outb} if op is OPS.dynamic_qlinear.out else {}
        with pytest.raises(RuntimeError, match="is_weight_prepacked = True"):
            op(xb, packed8, ss, None, is_weight_prepacked=True, **kw)


def test_errors_name_the_value():
    q, s, z, packed, b = _layer(64)
    x = torch.randn(2, K)
    with pytest.raises(RuntimeError, match="out has shape"):
        OPS.woq_linear_relu.out(x, packed, s, z, b, out=torch.empty(2, 63))
    with pytest.raises(RuntimeError, match="out has dtype"):
        OPS.woq_linear_relu.out(x, packed, s, z, b,
                                out=torch.empty(2, 64).bfloat16())
    with pytest.raises(RuntimeError, match="out must be contiguous"):
        OPS.woq_linear_relu.out(x, packed, s, z, b,
                                out=torch.empty(64, 2).t())
    with pytest.raises(RuntimeError, match="binary operand 0 has shape"):
        OPS.woq_linear_add(x, packed, s, z, torch.empty(2, 32), b)
    with pytest.raises(RuntimeError, match="binary operand 1"):
        OPS.woq_linear_mul_add(x, packed, s, z, torch.randn(2, 64),
                               torch.randn(2, 64).half(), b)
    q3, s3, _, packed3, _ = _layer(8 * 9)
    odd = OPS.woq_repack_weight(torch.randint(-8, 8, (65, K),
                                              dtype=torch.int8)).t()
    with pytest.raises(RuntimeError, match="N = 65"):
        OPS.woq_linear_silu_mul(x, odd, torch.rand(K // GS, 65), None, None)


def test_linear_module_epilogue():
    n, inter = 96, 48
    q, s, z, packed, b = _layer(n, bias=False)
    x = torch.randn(5, K)
    lin = w4jit.Linear.from_unpacked(q, s, None, None, dtype=torch.float32,
                                     epilogue="silu_mul")
    assert lin.out_features == inter
    t, mag = w4a16_reference(x, q, s, None, None)
    want = F.silu(t[:, :inter]) * t[:, inter:]
    got = lin(x)
    _check(got, want, 1e-4 * (mag[:, :inter] + mag[:, inter:]) + 1e-5)
    lin2 = w4jit.Linear.from_unpacked(q, s, None, None, dtype=torch.float32,
                                      epilogue="gelu_tanh+add")
    a = torch.randn(5, n)
    want2 = F.gelu(t, approximate="tanh") + a.double()
    _check(lin2(x, a), want2, 1e-4 * mag + 1e-5)
    with pytest.raises(RuntimeError, match="epilogue 'tanh'"):
        w4jit.Linear.from_unpacked(q, s, None, None, epilogue="tanh")
