"""torch.library.opcheck on every torch.ops.w4jit op and overload: the
schema's mutation and alias claims hold, the fake kernel (python/w4jit/
_fake.py) gives the real kernel's shapes, dtypes and strides, and the op
traces under AOT dispatch with dynamic shapes to the eager results. Every
op the library registers must be in CASES or in NOT_CHECKED (with the
reason), so an op added without a fake fails here. torch 2.4 and later."""
import pytest
import torch

import w4jit  # noqa: F401
from w4jit import _fake
from reference import random_layer, stacked_experts

TORCH_VERSION = tuple(int(p) for p in
                      torch.__version__.split("+")[0].split(".")[:2])
pytestmark = pytest.mark.skipif(
    TORCH_VERSION < (2, 4) or not _fake.supported(),
    reason=f"torch {torch.__version__} has no torch.library.opcheck / "
    "register_fake (2.4 and later)")

OPS = torch.ops.w4jit
K, N, GS = 64, 48, 32
# Test-only helpers that take no tensors, or measure time.
NOT_CHECKED = {
    "_cache_size": "no tensor arguments",
    "_clear_cache": "no tensor arguments",
    "_fingerprint_counts": "no tensor arguments",
    "flush_weight_cache": "no tensor arguments",
    "weight_check": "no tensor arguments",
    "_concurrency": "no tensor arguments",
    "flush_moe_weight_cache": "no tensor arguments",
    "_int4pack_capability": "no tensor arguments",
    "_overhead_probe": "returns timings, which differ from call to call "
                       "(its fake kernel is checked below)",
}


def _woq(u4=True, dtype=torch.float32, m=3):
    q, s, z = random_layer(N, K, GS, u4)
    packed = OPS.woq_repack_weight(q).t()
    b = torch.randn(N)
    x = torch.randn(m, K).to(dtype)
    return x, packed, s, z, b


def _operands(count, m=3, dtype=torch.float32):
    return [torch.randn(m, N).to(dtype) for _ in range(count)]


POST_OPS = {"woq_linear": 0, "woq_linear_relu": 0, "woq_linear_sigmoid": 0,
            "woq_linear_gelu_tanh": 0, "woq_linear_gelu_erf": 0,
            "woq_linear_silu_mul": 0, "woq_linear_add": 1,
            "woq_linear_mul_add": 2, "woq_linear_add_add": 2}


def _woq_case(name, overload, dtype):
    x, packed, s, z, b = _woq(dtype=dtype)
    args = (x, packed, s, z, *_operands(POST_OPS[name], dtype=dtype), b)
    if overload == "default":
        return args, {}
    n_out = N // 2 if name == "woq_linear_silu_mul" else N
    return args, {"out": torch.empty(3, n_out, dtype=dtype)}


def _dq_case(overload, act_quant):
    q, s, _ = random_layer(N, K, GS, False)
    packed8 = OPS.woq_repack_weight(q).view(torch.int8)
    x = torch.randn(2, 3, K).bfloat16()
    kwargs = {"act_quant": act_quant}
    if overload == "out":
        kwargs["out"] = torch.empty(2, 3, N, dtype=torch.bfloat16)
    return (x, packed8, s, torch.randn(N)), kwargs


def _moe_case(mode):
    e, h, i, t, k = 4, 64, 32, 5, 2
    _, _, p13, p2, s13, s2 = stacked_experts(e, h, i, GS)
    x = torch.randn(t, h).bfloat16()
    ids = torch.stack([torch.randperm(e)[:k] for _ in range(t)]).int()
    weights = torch.rand(t, k)
    out = torch.zeros(t, h, dtype=torch.bfloat16)
    return ((out, x, p13, p2, None, None, weights, ids, False, "silu", s13,
             s2), {"mode": mode})


def _moe_functional_case(mode):
    args, kwargs = _moe_case(mode)
    return args[1:], kwargs


def _cases():
    cases = []
    for name in POST_OPS:
        for overload in ("default", "out"):
            for dtype in (torch.float32, torch.bfloat16):
                cases.append((f"{name}.{overload}-{dtype}",
                              getattr(getattr(OPS, name), overload),
                              lambda n=name, o=overload, d=dtype:
                              _woq_case(n, o, d)))
    for overload in ("default", "out"):
        for aq in ("per_token", "per_group"):
            cases.append((f"dynamic_qlinear.{overload}-{aq}",
                          getattr(OPS.dynamic_qlinear, overload),
                          lambda o=overload, a=aq: _dq_case(o, a)))
    cases.append(("woq_repack_weight", OPS.woq_repack_weight.default,
                  lambda: ((torch.randint(-8, 8, (N, K),
                                          dtype=torch.int8),), {})))
    cases.append(("woq_repack_from_int4pack",
                  OPS.woq_repack_from_int4pack.default,
                  lambda: ((torch.randint(0, 256, (64, K // 2),
                                          dtype=torch.uint8),), {})))
    for mode in ("w4a16", "da8w4"):
        cases.append((f"fused_moe-{mode}", OPS.fused_moe.default,
                      lambda m=mode: _moe_case(m)))
        cases.append((f"fused_moe_functional-{mode}",
                      OPS.fused_moe_functional.default,
                      lambda m=mode: _moe_functional_case(m)))
    return cases


CASES = _cases()


def _registered_ops():
    names = set()
    for qualname in torch._C._dispatch_get_all_op_names():
        if qualname.startswith("w4jit::"):
            names.add(qualname.split("::", 1)[1].split(".")[0])
    return names


def test_every_op_is_checked_or_says_why_not():
    checked = {c[1].name().split("::", 1)[1].split(".")[0] for c in CASES}
    missing = _registered_ops() - checked - set(NOT_CHECKED)
    assert not missing, f"ops with no opcheck case: {sorted(missing)}"
    # Every op with tensor arguments has a fake kernel (overloads too).
    for name in _registered_ops() - {
            n for n, why in NOT_CHECKED.items() if "no tensor" in why}:
        for overload in getattr(OPS, name).overloads():
            qual = f"w4jit::{name}" + ("" if overload == "default"
                                       else f".{overload}")
            assert torch._C._dispatch_has_kernel_for_dispatch_key(
                qual, "Meta"), f"{qual} has no fake (Meta) kernel"


ALL_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
             "test_aot_dispatch_dynamic")


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_opcheck(case):
    _, op, make = case
    args, kwargs = make()
    torch.library.opcheck(op, args, kwargs, test_utils=ALL_UTILS)


def test_fused_moe_has_its_own_functionalization():
    # fused_moe's `mode` keyword would clash with auto_functionalized's own
    # `mode` parameter (docs/torch-2x.md): its Functionalize kernel keeps
    # torch off that route (torch's own predicate says so), and the
    # functional graph calls the twin instead.
    from torch._higher_order_ops.auto_functionalize import (
        can_auto_functionalize)
    assert torch._C._dispatch_has_kernel_for_dispatch_key(
        "w4jit::fused_moe", "Functionalize")
    assert not can_auto_functionalize(OPS.fused_moe.default)
    args, kwargs = _moe_case("w4a16")
    out = args[0]

    def f(out, *rest):
        OPS.fused_moe(out, *rest, **kwargs)
        return out

    gm = torch.fx.experimental.proxy_tensor.make_fx(
        torch.func.functionalize(f, remove="mutations_and_views"))(*args)
    targets = [str(n.target) for n in gm.graph.nodes
               if n.op == "call_function"]
    assert any("fused_moe_functional" in t for t in targets), targets
    assert not any("auto_functionalized" in t for t in targets), targets
    want = f(out.clone(), *args[1:])
    assert torch.equal(gm(out.clone(), *args[1:]), want)


def test_fused_moe_functionalization_checks_output():
    args, kwargs = _moe_case("w4a16")
    bad = torch.zeros(args[0].shape[0] + 1, args[0].shape[1],
                      dtype=args[0].dtype)

    def f(out, *rest):
        OPS.fused_moe(out, *rest, **kwargs)
        return out

    with pytest.raises(RuntimeError, match="output's dim 0 is 6 but "
                       "input's is 5"):
        torch.func.functionalize(f)(bad, *args[1:])


@pytest.mark.parametrize("inference", (False, True),
                         ids=("grad", "inference_mode"))
def test_eager_fused_moe_writes_output_directly(inference):
    # The functionalization is for tracing only: an eager call runs the CPU
    # kernel into `output` (same storage, no twin, no copy).
    args, kwargs = _moe_case("w4a16")
    out = args[0]
    ptr = out.data_ptr()
    with torch.inference_mode(inference):
        with torch.profiler.profile() as prof:
            OPS.fused_moe(*args, **kwargs)
    names = {e.name for e in prof.events()}
    assert any("w4jit::fused_moe" == n for n in names), sorted(names)
    assert not any("fused_moe_functional" in n for n in names), sorted(names)
    assert not any("copy_" in n for n in names), sorted(names)
    assert out.data_ptr() == ptr
    want = OPS.fused_moe_functional(*args[1:], **kwargs)
    assert torch.equal(out, want)


def test_overhead_probe_fake_shape():
    x, packed, s, z, b = _woq()
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fx = mode.from_tensor(x)
        out = OPS._overhead_probe("woq_linear", fx, mode.from_tensor(packed),
                                  mode.from_tensor(s), None, None, 7)
    assert out.shape == (2, 7) and out.dtype == torch.float64
