"""The vLLM plugin's MoE hook (w4jit/vllm/moe_method.py) against stub
classes shaped like vLLM's, with no vLLM installed: what install() checks,
how apply() reads and forwards vLLM's arguments, and that anything
unexpected while taking a layer is a decline (or, where vLLM has no experts
class of its own, a load error naming why), never an exception out of
vLLM's model loading. The same hook inside a real vLLM:
test_vllm_plugin.py."""
import enum
import logging
import sys
import types

import pytest
import torch

from w4jit import formats

E, H, I, GROUP = 4, 128, 128, 128  # experts, hidden, intermediate, group

_MOE = "vllm.model_executor.layers.fused_moe"
_QUANT = "vllm.model_executor.layers.quantization"
# (module, class) of the four quant methods the hook wraps.
_METHODS = (
    (f"{_QUANT}.compressed_tensors.compressed_tensors_moe."
     "compressed_tensors_moe_wna16", "CompressedTensorsWNA16MoEMethod"),
    (f"{_QUANT}.auto_gptq", "AutoGPTQMoEMethod"),
    (f"{_QUANT}.auto_awq", "AutoAWQMoEMethod"),
    (f"{_QUANT}.moe_wna16", "MoeWNA16Method"),
)


class MoEActivation(enum.Enum):
    SILU = "silu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    RELU2 = "relu2"


class WNA16MoEBackend(enum.Enum):
    CPU = "CPU"
    ZEN_CPU = "ZEN_CPU"
    MARLIN = "MARLIN"


class CPUExpertsInt4:
    pass


def _method_class(name, monolithic_as_property=True, apply_names=True):
    """A stub of one of vLLM's int4 MoE quant methods: vLLM's own
    process_weights_after_loading and apply record that they ran."""
    def process_weights_after_loading(self, layer):
        layer.vllm_processed = True

    if apply_names:
        def apply(self, layer, x, topk_weights, topk_ids, shared_experts,
                  shared_experts_input, *extra, **kw):
            return ("vllm", x, topk_weights, topk_ids, extra, kw)
    else:
        def apply(self, layer, hidden, weights, ids):
            return ("vllm", hidden)

    def monolithic(self):
        return True

    body = {"process_weights_after_loading": process_weights_after_loading,
            "apply": apply,
            "is_monolithic": (property(monolithic) if monolithic_as_property
                              else monolithic)}
    return type(name, (), body)


def _select_backend(config, weight_key, *args, **kwargs):
    return WNA16MoEBackend.CPU, CPUExpertsInt4


@pytest.fixture
def vllm_stub(monkeypatch):
    """sys.modules holding a stub vLLM (every package on the way to the
    modules the hook imports) and w4jit.vllm imported afresh against it;
    returns {class name: stub class} and the hook module."""
    classes = {name: _method_class(name) for _, name in _METHODS}
    return _install_stub(monkeypatch, classes)


def _install_stub(monkeypatch, classes):
    leaves = {
        f"{_MOE}.activation": {"MoEActivation": MoEActivation},
        f"{_MOE}.oracle.int_wna16": {"WNA16MoEBackend": WNA16MoEBackend},
        f"{_MOE}.experts.cpu_moe": {"CPUExpertsInt4": CPUExpertsInt4},
        "vllm.envs": {"VLLM_CPU_INT4_W4A8": False},
    }
    for module, name in _METHODS:
        leaves[module] = {name: classes[name],
                          "select_wna16_moe_backend": _select_backend}
    for path, attrs in leaves.items():
        parts = path.split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            if name not in sys.modules or not getattr(
                    sys.modules[name], "_w4jit_stub", False):
                module = types.ModuleType(name)
                module._w4jit_stub = True
                module.__path__ = []
                monkeypatch.setitem(sys.modules, name, module)
        for key, value in attrs.items():
            setattr(sys.modules[path], key, value)
    # Imported afresh against the stub; ops imports no vLLM and
    # registers a torch op, which a process does once.
    for name in [m for m in sys.modules if m.startswith("w4jit.vllm")
                 and m != "w4jit.vllm.ops"]:
        monkeypatch.delitem(sys.modules, name)
    import w4jit.vllm.moe_method as hook
    return classes, hook


def _layer(zero_row_scales=False):
    """A stub FusedMoE layer holding compressed-tensors experts as vLLM
    loads them: weight_packed int32 [E, N, K/8], weight_scale [E, N, G]."""
    g = torch.Generator().manual_seed(0)
    layer = types.SimpleNamespace(
        activation=MoEActivation.SILU,
        moe_config=types.SimpleNamespace(in_dtype=torch.bfloat16),
        expert_map=None, apply_router_weight_on_input=False)
    for proj, n, k in (("w13", 2 * I, H), ("w2", H, I)):
        packed, scales = [], []
        for _ in range(E):
            q = torch.randint(-8, 8, (n, k), dtype=torch.int8, generator=g)
            s = (torch.rand(k // GROUP, n, generator=g) / 32 + 1e-3)
            p, sc, _ = formats.pack_compressed_tensors(q, s.to(torch.bfloat16))
            packed.append(p)
            scales.append(sc)
        setattr(layer, f"{proj}_weight_packed", torch.nn.Parameter(
            torch.stack(packed), requires_grad=False))
        setattr(layer, f"{proj}_weight_scale", torch.nn.Parameter(
            torch.stack(scales), requires_grad=False))
    return layer


def _ct_method(classes, experts_cls=CPUExpertsInt4):
    method = classes["CompressedTensorsWNA16MoEMethod"]()
    method.wna16_backend = WNA16MoEBackend.CPU
    method.num_bits, method.strategy, method.symmetric = 4, "group", True
    method.experts_cls = experts_cls
    return method


def _inputs(tokens=3, k=2):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(tokens, H, generator=g).to(torch.bfloat16)
    ids = torch.randint(0, E, (tokens, k), dtype=torch.int32, generator=g)
    weights = torch.rand(tokens, k, generator=g)
    return x, weights, ids


def test_a_taken_layer_runs_on_w4jit_by_position_or_by_name(vllm_stub):
    classes, hook = vllm_stub
    hook.install()
    method, layer = _ct_method(classes), _layer()
    method.process_weights_after_loading(layer)
    assert not hasattr(layer, "vllm_processed")
    assert layer.w13_weight_packed.numel() == 0  # vLLM's copy freed
    assert method.is_monolithic is False  # vLLM's runner routes
    x, weights, ids = _inputs()
    want = layer.__dict__["_w4jit_moe"](x, ids, weights)
    got = method.apply(layer, x, weights, ids, None, None)
    assert torch.equal(got, want)
    got = method.apply(layer, x=x, topk_ids=ids, topk_weights=weights,
                       shared_experts=None, shared_experts_input=None)
    assert torch.equal(got, want)


def test_a_layer_not_taken_gets_vllms_calls_unchanged(vllm_stub):
    classes, hook = vllm_stub
    hook.install()
    method = _ct_method(classes)
    method.num_bits = 8  # declined: 8-bit experts
    layer = _layer()
    method.process_weights_after_loading(layer)
    assert layer.vllm_processed
    assert method.is_monolithic is True
    out = method.apply(layer, "x", "w", "ids", None, None, "more", new=1)
    assert out == ("vllm", "x", "w", "ids", ("more",), {"new": 1})


def test_anything_unexpected_while_taking_is_a_decline(vllm_stub, caplog):
    classes, hook = vllm_stub
    hook.install()
    method, layer = _ct_method(classes), _layer()
    del layer.moe_config  # a layer that does not look like vLLM's
    with caplog.at_level(logging.INFO, logger="vllm.w4jit"):
        method.process_weights_after_loading(layer)
    assert layer.vllm_processed
    assert any("MoE layer not taken" in r.getMessage()
               and "moe_config" in r.getMessage() for r in caplog.records)


def test_no_vllm_class_and_no_w4jit_is_a_load_error(vllm_stub):
    classes, hook = vllm_stub
    hook.install()
    method = _ct_method(classes, hook._W4jitOnly.mark(CPUExpertsInt4))
    layer = _layer()
    layer.activation = MoEActivation.RELU2
    with pytest.raises(ValueError, match="activation relu2"):
        method.process_weights_after_loading(layer)


def test_install_checks_what_it_relies_on_before_wrapping(monkeypatch):
    classes = {name: _method_class(name) for _, name in _METHODS}
    classes["AutoAWQMoEMethod"] = _method_class(
        "AutoAWQMoEMethod", monolithic_as_property=False)
    _, hook = _install_stub(monkeypatch, classes)
    with pytest.raises(AttributeError, match="is_monolithic is not a "
                       "property"):
        hook.install()
    assert not any(getattr(c, "_w4jit_wrapped", False)
                   for c in classes.values())

    classes = {name: _method_class(name) for _, name in _METHODS}
    classes["AutoGPTQMoEMethod"] = _method_class("AutoGPTQMoEMethod",
                                                 apply_names=False)
    _, hook = _install_stub(monkeypatch, classes)
    with pytest.raises(AttributeError, match="no parameter x, topk_weights, "
                       "topk_ids"):
        hook.install()


def test_say_once_keys_on_the_text(vllm_stub, caplog):
    from w4jit.vllm import _common
    with caplog.at_level(logging.INFO, logger="vllm.w4jit"):
        for _ in range(3):
            _common.say_once("no class for %s (%s)", "w4a16",
                             NotImplementedError("none fits"))
    said = [r for r in caplog.records if "none fits" in r.getMessage()]
    assert len(said) == 1


def test_any_build_failure_falls_back_with_the_reason(vllm_stub):
    from w4jit.vllm import _common

    def build(mode):
        raise TypeError(f"no {mode}")
    module, why = _common.build_with_fallback(build, "test layer")
    assert module is None and "no w4a16" in why


def test_garbage_routing_gives_nan_rows_not_an_exception(vllm_stub):
    """vLLM's compiled warm-up hands the experts NaN routing weights: the
    plugin's layers propagate them as NaN rows, as vLLM's kernels do, and
    the other tokens are computed as without them."""
    classes, hook = vllm_stub
    hook.install()
    method, layer = _ct_method(classes), _layer()
    method.process_weights_after_loading(layer)
    assert layer.__dict__["_w4jit_moe"].non_finite == "propagate"
    x, weights, ids = _inputs()
    clean = method.apply(layer, x, weights, ids, None, None)
    weights[1, 0] = float("nan")
    got = method.apply(layer, x, weights, ids, None, None)
    assert got[1].isnan().all()
    assert torch.equal(got[0], clean[0]) and torch.equal(got[2], clean[2])
