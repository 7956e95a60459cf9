"""numerics="zentorch" / W4JIT_NUMERICS=zentorch (docs/numerics-zentorch.md):
each dequantized W4A16 weight rounded to bf16 before the dot products, as
zentorch / AOCL compute it. Against the float64 references of both
numerics: the switch must match its own and visibly differ from the
exact one."""
import os

import pytest
import torch

import w4jit
from reference import assert_close, random_layer, w4a16_reference

N, K = 96, 512


@pytest.fixture
def numerics_env():
    """Sets W4JIT_NUMERICS for the test, restoring it afterwards."""
    old = os.environ.get("W4JIT_NUMERICS")

    def set_to(value):
        if value is None:
            os.environ.pop("W4JIT_NUMERICS", None)
        else:
            os.environ["W4JIT_NUMERICS"] = value
    yield set_to
    set_to(old)


def _outside_exact_tolerance(y, x, q, s, z):
    want, mag = w4a16_reference(x, q, s, z, None)
    return int(((y.double() - want).abs() > 1e-5 * mag + 1e-6).sum())


@pytest.mark.parametrize("u4", [False, True], ids=["s4", "u4"])
@pytest.mark.parametrize("group", [128, -1])
@pytest.mark.parametrize("m", [1, 3, 16, 70])
def test_woq_linear_under_the_switch(numerics_env, u4, group, m):
    q, s, z = random_layer(N, K, group, u4)
    x = torch.randn(m, K).bfloat16()
    r = torch.ops.w4jit.woq_repack_weight(q)
    numerics_env("zentorch")
    y = torch.ops.w4jit.woq_linear(x, r.t(), s, z, None)
    want, mag = w4a16_reference(x, q, s, z, None, numerics="zentorch")
    assert_close(y, want, mag, torch.bfloat16)
    # f32 output through a post-op keeps the difference visible: exact
    # numerics put most outputs outside the switch's reference.
    numerics_env("exact")
    y_exact = torch.ops.w4jit.woq_linear(x, r.t(), s, z, None)
    want_exact, mag_exact = w4a16_reference(x, q, s, z, None)
    assert_close(y_exact, want_exact, mag_exact, torch.bfloat16)


def test_switch_changes_f32_results(numerics_env):
    q, s, z = random_layer(N, K, 128, False)
    x = torch.randn(8, K)
    r = torch.ops.w4jit.woq_repack_weight(q)
    numerics_env("zentorch")
    y = torch.ops.w4jit.woq_linear(x, r.t(), s, z, None)
    want, mag = w4a16_reference(x, q, s, z, None, numerics="zentorch")
    assert_close(y, want, mag, torch.float32)
    assert _outside_exact_tolerance(y, x, q, s, z) > y.numel() // 4
    numerics_env(None)
    y_default = torch.ops.w4jit.woq_linear(x, r.t(), s, z, None)
    assert _outside_exact_tolerance(y_default, x, q, s, z) == 0


def test_bad_value_names_it(numerics_env):
    q, s, z = random_layer(N, K, 128, False)
    r = torch.ops.w4jit.woq_repack_weight(q)
    numerics_env("aocl")
    with pytest.raises(RuntimeError, match="W4JIT_NUMERICS = 'aocl'"):
        torch.ops.w4jit.woq_linear(torch.randn(1, K).bfloat16(), r.t(), s,
                                   z, None)


@pytest.mark.parametrize("u4", [False, True], ids=["s4", "u4"])
def test_linear_keyword(numerics_env, u4):
    numerics_env(None)
    q, s, z = random_layer(N, K, 64, u4)
    bias = torch.randn(N)
    lin = w4jit.Linear.from_unpacked(q, s, z, bias, numerics="zentorch")
    assert lin.numerics == "zentorch"
    assert "numerics=zentorch" in repr(lin)
    assert any("_wrbf16" in k for k in lin.kernel_names()), \
        lin.kernel_names()
    for m in (1, 5, 33):
        x = torch.randn(2, m, K).bfloat16()
        want, mag = w4a16_reference(x, q, s, z, bias, numerics="zentorch")
        assert_close(lin(x), want, mag, torch.bfloat16)
    exact = w4jit.Linear.from_unpacked(q, s, z, bias)
    assert exact.numerics == "exact"
    assert not any("_wrbf16" in k for k in exact.kernel_names())
    # None takes the environment.
    numerics_env("zentorch")
    assert w4jit.Linear.from_unpacked(q, s, z, bias).numerics == "zentorch"
    # ... for W4A16 only: DA8W4 has no dequantized weight to round.
    assert w4jit.Linear.from_unpacked(q, s, z, bias,
                                      mode="da8w4").numerics == "exact"


def test_linear_keyword_errors():
    q, s, z = random_layer(N, K, 64, False)
    with pytest.raises(RuntimeError, match="numerics 'aocl'"):
        w4jit.Linear.from_unpacked(q, s, numerics="aocl")
    with pytest.raises(RuntimeError, match="numerics = zentorch"):
        w4jit.Linear.from_unpacked(q, s, mode="da8w4", numerics="zentorch")
