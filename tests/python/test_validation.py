"""Every bad argument raises RuntimeError with a message naming it."""
import pytest
import torch

from reference import random_layer

N, K, GS = 64, 256, 64
G = K // GS


@pytest.fixture
def good():
    q, scales, zeros = random_layer(N, K, GS, True)
    r = torch.ops.w4jit.woq_repack_weight(q)
    return dict(x=torch.randn(3, K).bfloat16(), packed=r.t(), scales=scales,
                zp=zeros, bias=torch.randn(N), dq_packed=r.view(torch.int8))


def woq(a, **over):
    a = {**a, **over}
    return torch.ops.w4jit.woq_linear(a["x"], a["packed"], a["scales"],
                                      a["zp"], a["bias"])


def dq(a, **over):
    a = {**a, **over}
    return torch.ops.w4jit.dynamic_qlinear(a["x"], a["dq_packed"],
                                           a["scales"], a["bias"])


WOQ_BAD = [
    ("x", torch.randn(3, K).half(), "x has dtype Half"),
    ("x", torch.randint(0, 3, (3, K)), "x has dtype Long"),
    ("x", torch.randn(3, K + 8).bfloat16(), f"last dim is {K + 8}"),
    ("x", torch.tensor(1.0).bfloat16(), "x is a scalar"),
    ("packed", torch.zeros(K // 8, N, dtype=torch.int8), "packed has dtype Char"),
    ("packed", torch.zeros(K // 8, N, 1, dtype=torch.int32), "3 dims"),
    ("packed", torch.zeros(0, N, dtype=torch.int32), "non-empty"),
    ("scales", torch.rand(G, N + 1), f"dim 1 is {N + 1}"),
    ("scales", torch.rand(3, N), "G = 3 groups must divide K = 256"),
    ("scales", torch.rand(G, N).double(), "scales has dtype Double"),
    ("scales", torch.rand(G * N), "1 dims"),
    ("zp", torch.zeros(G + 1, N, dtype=torch.int8), f"dim 0 is {G + 1}"),
    ("zp", torch.zeros(G, N, dtype=torch.int32), "zero_points has dtype Int"),
    ("zp", torch.full((G, N), 16, dtype=torch.int8), "16"),
    ("bias", torch.randn(N + 2), f"dim 0 is {N + 2}"),
    ("bias", torch.randn(N).double(), "bias has dtype Double"),
    ("bias", torch.randn(1, N), "2 dims"),
]


@pytest.mark.parametrize("arg,value,needle", WOQ_BAD,
                         ids=[f"{a}-{n}" for a, _, n in WOQ_BAD])
def test_woq_linear_rejects(good, arg, value, needle):
    with pytest.raises(RuntimeError, match="woq_linear") as e:
        woq(good, **{arg: value})
    assert needle in str(e.value), str(e.value)


def test_meta_input(good):
    # The ops are CPU kernels. On a torch with their fake kernels (2.4 and
    # later, w4jit/_fake.py), meta tensors get the result's meta tensor, as
    # for torch's own ops; on older torch (Debian's 1.13) the dispatcher
    # refuses them, naming the op and the Meta backend.
    from w4jit import _fake
    meta = {k: v.to("meta") if isinstance(v, torch.Tensor) else v
            for k, v in good.items()}
    if _fake.supported():
        y = woq(meta)
        assert y.device.type == "meta" and y.shape == (3, N)
        assert y.dtype == torch.bfloat16
    else:
        with pytest.raises(RuntimeError, match="w4jit::woq_linear") as e:
            woq(meta)
        assert "Meta" in str(e.value), str(e.value)


DQ_BAD = [
    ("x", torch.randn(3, K).half(), "x has dtype Half"),
    ("x", torch.randn(3, K - 2).bfloat16(), f"last dim is {K - 2}"),
    ("dq_packed", torch.zeros(N, K // 2).float(), "packed has dtype Float"),
    ("dq_packed", torch.zeros(N, 3, dtype=torch.int8), "K = 6 must be"),
    ("scales", torch.rand(G, N - 1), f"dim 1 is {N - 1}"),
    ("scales", torch.rand(5, N), "G = 5 groups must divide K = 256"),
    ("bias", torch.randn(N - 1), f"dim 0 is {N - 1}"),
    ("bias", torch.randn(N).to(torch.int32), "bias has dtype Int"),
]


@pytest.mark.parametrize("arg,value,needle", DQ_BAD,
                         ids=[f"{a}-{n}" for a, _, n in DQ_BAD])
def test_dynamic_qlinear_rejects(good, arg, value, needle):
    with pytest.raises(RuntimeError, match="dynamic_qlinear") as e:
        dq(good, **{arg: value})
    assert needle in str(e.value), str(e.value)


def test_empty_batch_is_still_validated(good):
    with pytest.raises(RuntimeError, match="scales"):
        woq(good, x=torch.zeros(0, K).bfloat16(), scales=torch.rand(G, N + 1))


@pytest.mark.parametrize("w,needle", [
    (torch.zeros(4, 12, dtype=torch.int8), "K = 12 must be a multiple of 8"),
    (torch.zeros(4, 16), "weight has dtype Float"),
    (torch.zeros(4, 2, 8, dtype=torch.int8), "3 dims"),
    (torch.full((4, 16), 16, dtype=torch.int8), "= 16 is not a 4-bit value"),
    (torch.full((4, 16), -9, dtype=torch.int8), "= -9 is not a 4-bit value"),
])
def test_repack_rejects(w, needle):
    with pytest.raises(RuntimeError, match="woq_repack_weight") as e:
        torch.ops.w4jit.woq_repack_weight(w)
    assert needle in str(e.value), str(e.value)


def test_repack_names_position_of_bad_value():
    w = torch.zeros(4, 16, dtype=torch.int8)
    w[2, 9] = 20
    with pytest.raises(RuntimeError, match=r"weight\[2, 9\] = 20"):
        torch.ops.w4jit.woq_repack_weight(w)


def _ct(u4=False):
    from w4jit import formats
    q, scales, zeros = random_layer(N, K, GS, u4)
    return formats.pack_compressed_tensors(q, scales, zeros)


CLASS_BAD = [
    (dict(fmt="nope"), "format 'nope'"),
    (dict(mode="w8a8"), "mode 'w8a8'"),
    (dict(act="float16"), "act_dtype 'float16'"),
    (dict(group_size=48), "group_size = 48"),
    (dict(group_size=0), "group_size = 0"),
    (dict(qweight=torch.zeros(N, K // 8)), "qweight has dtype Float"),
    (dict(scales=torch.rand(N, G + 1)), f"dim 1 is {G + 1}"),
    (dict(zp=torch.zeros(N // 8, G, dtype=torch.int8)), "zero_points has dtype Char"),
    (dict(zp=torch.zeros(N // 8 + 1, G, dtype=torch.int32)), f"dim 0 is {N // 8 + 1}"),
    (dict(g_idx=torch.zeros(K, dtype=torch.int32)), f"g_idx gives group 0 {K} members"),
    (dict(g_idx=torch.full((K,), K // GS, dtype=torch.int32)), f"g_idx[0] = {K // GS} is not a group"),
    (dict(bias=torch.randn(N + 1)), f"dim 0 is {N + 1}"),
]


@pytest.mark.parametrize("over,needle", CLASS_BAD,
                         ids=[n for _, n in CLASS_BAD])
def test_linear_class_rejects(over, needle):
    packed, scale, zp = _ct(u4=True)
    a = dict(fmt="compressed_tensors", qweight=packed, scales=scale, zp=zp,
             g_idx=None, bias=None, mode="w4a16", group_size=GS,
             act="bfloat16")
    a.update(over)
    with pytest.raises(RuntimeError, match="w4jit.Linear") as e:
        torch.classes.w4jit.Linear(a["fmt"], a["qweight"], a["scales"],
                                   a["zp"], a["g_idx"], a["bias"], a["mode"],
                                   a["group_size"], a["act"], True, "none",
                                   a.get("act_quant", "per_token"),
                                   a.get("numerics", ""),
                                   a.get("non_finite", "propagate"))
    assert needle in str(e.value), str(e.value)


def test_linear_class_forward_rejects_wrong_x():
    import w4jit
    packed, scale, _ = _ct()
    lin = w4jit.Linear.from_compressed_tensors(packed, scale)
    with pytest.raises(RuntimeError, match="x has dtype Float"):
        lin(torch.randn(2, K))
    with pytest.raises(RuntimeError, match=f"last dim is {K + 1}"):
        lin(torch.randn(2, K + 1).bfloat16())
