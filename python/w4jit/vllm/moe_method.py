"""vLLM's int4 MoE experts on w4jit, whichever experts class vLLM chose.

vLLM chooses int4 MoE experts inside its WNA16 MoE oracle from a closed
list of backends (no registry a plugin can add to): on a CPU, zentorch's
monolithic `ZentorchExpertsInt4` where zentorch's ops load and DA8W4 is on
(vLLM's default on Zen), its own modular `CPUExpertsInt4` otherwise. So the
plugin hooks one level up, at the quant methods that ask the oracle: the
compressed-tensors WNA16 MoE method, GPTQ's, AWQ's and MoeWNA16's. For each
the wrap of `process_weights_after_loading` reads the checkpoint's expert
tensors as vLLM loaded them (skipping vLLM's repacking), builds one
`w4jit.MoE`, and frees vLLM's copies.

Routing stays vLLM's: a taken layer answers `is_monolithic` False, so vLLM's
MoE runner routes with the model's own router (its top-k, renormalisation,
scoring function, grouped top-k, correction bias and routed scaling, as for
any modular experts class) and hands `apply` the top-k; the runner also runs
the shared experts (before the routed ones, as it does on CPUs for every
experts class) and adds them. A monolithic class would have routed inside
its kernel; w4jit's layer never needs to. Anything the plugin does not take
is declined here, at load time, with one log line, and runs exactly as vLLM
set it up.

Where vLLM's oracle finds no CPU experts class at all for a layer w4jit
reads (compressed-tensors experts with zero points: neither of vLLM's CPU
classes takes them), vLLM would refuse the model; the plugin then answers
for the oracle with vLLM's CPU backend as a placeholder and takes the layer
itself, and a layer it then cannot take is an error at load time naming
why, never vLLM's kernel on weights it does not support.
"""
import inspect

import torch
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import (
    WNA16MoEBackend,
)

from ..moe import MoE
from . import ops
from ._common import build_with_fallback, free_params, say_once

# vLLM activation -> w4jit.MoE activation (gated, gate rows first in w13).
_ACTIVATIONS = {MoEActivation.SILU: "silu", MoEActivation.GELU: "gelu",
                MoEActivation.GELU_TANH: "gelu_tanh"}
_CPU_BACKENDS = (WNA16MoEBackend.CPU, WNA16MoEBackend.ZEN_CPU)
_DTYPES = (torch.bfloat16, torch.float32)


def _backend(method):
    # compressed-tensors and MoeWNA16 name it wna16_backend, GPTQ and AWQ
    # wna16_moe_backend.
    return getattr(method, "wna16_backend",
                   getattr(method, "wna16_moe_backend", None))


def _why_not_common(method, layer):
    """Reasons that hold for every checkpoint format; None when none does."""
    backend = _backend(method)
    if backend not in _CPU_BACKENDS:
        name = getattr(backend, "value", backend)
        return f"vLLM chose its {name} MoE backend, not a CPU one"
    if layer.activation not in _ACTIVATIONS:
        return f"activation {layer.activation.value}"
    if _in_dtype(layer) not in _DTYPES:
        return f"activations in {_in_dtype(layer)}, not bf16 or f32"
    if getattr(layer, "expert_map", None) is not None:
        return "expert parallelism (not every expert on this rank)"
    if getattr(layer, "apply_router_weight_on_input", False):
        return "router weights applied on the input"
    return None


def _in_dtype(layer):
    return getattr(layer.moe_config, "in_dtype", None) or torch.bfloat16


def _bias(layer, name):
    """An expert bias vLLM loaded, or None (GPTQ's method makes zero biases
    for every layer and keeps only those the checkpoint had)."""
    bias = getattr(layer, name, None)
    if bias is None or bias.numel() == 0:
        return None
    loaded = getattr(layer, "_loaded_expert_biases", None)
    if loaded is not None and name not in loaded:
        return None
    return bias.data


def _expert_tensors(fmt, layer, names, zero_points,
                    convert=lambda t, kind: t):
    """{fmt, w13_/w2_ qweight, scales (and zero_points)} from the layer's
    parameters named by `names` ("qweight", "scales", "qzeros" for
    w13_qweight, ...); convert maps each tensor to w4jit's reading of it."""
    t = {"fmt": fmt}
    kinds = (("qweight", "scales", "zero_points") if zero_points
             else ("qweight", "scales"))
    for proj in ("w13", "w2"):
        for kind, name in zip(kinds, names):
            t[f"{proj}_{kind}"] = convert(
                getattr(layer, f"{proj}_{name}").data, kind)
    return t


_QWEIGHT_NAMES = ("qweight", "scales", "qzeros")
_QWEIGHT_PARAMS = ("w13_qweight", "w2_qweight", "w13_scales", "w2_scales",
                   "w13_qzeros", "w2_qzeros")


class _CompressedTensors:
    """CompressedTensorsWNA16MoEMethod: weight_packed int32 [E, N, K/8],
    weight_scale [E, N, G], weight_zero_point int32 [E, N/8, G]."""
    module = ("vllm.model_executor.layers.quantization.compressed_tensors."
              "compressed_tensors_moe.compressed_tensors_moe_wna16")
    cls_name = "CompressedTensorsWNA16MoEMethod"
    params = ("w13_weight_packed", "w2_weight_packed", "w13_weight_scale",
              "w2_weight_scale", "w13_weight_zero_point",
              "w2_weight_zero_point", "w13_bias", "w2_bias")
    label = "compressed-tensors"

    @staticmethod
    def why_not(method, layer):
        if method.num_bits != 4:
            return f"{method.num_bits}-bit experts"
        if method.strategy not in ("group", "channel"):
            return f"strategy {method.strategy!r}"
        return None

    @staticmethod
    def tensors(method, layer):
        return _expert_tensors(
            "compressed_tensors", layer,
            ("weight_packed", "weight_scale", "weight_zero_point"),
            zero_points=not method.symmetric)


class _Gptq:
    """AutoGPTQMoEMethod: qweight int32 [E, K/8, N] (packed along K),
    scales [E, G, N], qzeros int32 [E, G, N/8] (v1 stores zero - 1)."""
    module = "vllm.model_executor.layers.quantization.auto_gptq"
    cls_name = "AutoGPTQMoEMethod"
    params = _QWEIGHT_PARAMS + ("w13_bias", "w2_bias")
    label = "GPTQ"

    @staticmethod
    def why_not(method, layer):
        c = method.quant_config
        if c.quant_type.size_bits != 4:
            return f"{c.quant_type.size_bits}-bit experts"
        if c.desc_act:
            return "GPTQ act-order (desc_act) experts"
        return None

    @staticmethod
    def tensors(method, layer):
        c = method.quant_config
        v2 = c.full_config.get("checkpoint_format") == "gptq_v2"
        # Symmetric checkpoints still ship qzeros; vLLM reads them as
        # uint4b8 (zero 8), and so does w4jit without zero points.
        return _expert_tensors("gptq_v2" if v2 else "gptq_v1", layer,
                               _QWEIGHT_NAMES, zero_points=not c.is_sym)


class _Awq:
    """AutoAWQMoEMethod: qweight int32 [E, K, N/8] (packed along N,
    interleaved), qzeros int32 [E, G, N/8], scales [E, G, N]."""
    module = "vllm.model_executor.layers.quantization.auto_awq"
    cls_name = "AutoAWQMoEMethod"
    params = _QWEIGHT_PARAMS + ("w13_bias", "w2_bias")
    label = "AWQ"

    @staticmethod
    def why_not(method, layer):
        return None  # vLLM's method itself takes 4-bit AWQ only

    @staticmethod
    def tensors(method, layer):
        return _expert_tensors("awq", layer, _QWEIGHT_NAMES,
                               zero_points=method.quant_config.zero_point)


def _moe_wna16_zeros(qzeros):
    """MoeWNA16's zero points, uint8 [E, N/2, G] (two along N per byte, even
    n low), as compressed-tensors' int32 [E, N/8, G] (eight along N per
    word): the same nibbles, regrouped along N."""
    return (qzeros.transpose(1, 2).contiguous().view(torch.int32)
            .transpose(1, 2).contiguous())


class _MoeWna16:
    """MoeWNA16Method: its loader rewrites GPTQ and AWQ experts to uint8
    [E, N, K/2] (even k in the low nibble, the stored unsigned value: the
    bytes of compressed-tensors' words), scales [E, N, G] and zero points
    uint8 [E, N/2, G] holding the zero itself."""
    module = "vllm.model_executor.layers.quantization.moe_wna16"
    cls_name = "MoeWNA16Method"
    params = _QWEIGHT_PARAMS
    label = "MoeWNA16"

    @staticmethod
    def why_not(method, layer):
        bits = method.quant_config.weight_bits
        return f"{bits}-bit experts" if bits != 4 else None

    @staticmethod
    def tensors(method, layer):
        def convert(t, kind):
            if kind == "qweight":
                return t.view(torch.int32)
            return _moe_wna16_zeros(t) if kind == "zero_points" else t
        return _expert_tensors("compressed_tensors", layer, _QWEIGHT_NAMES,
                               zero_points=method.quant_config.has_zp,
                               convert=convert)


FORMATS = (_CompressedTensors, _Gptq, _Awq, _MoeWna16)


def _oracle_gap_reason(config, weight_key):
    """None when w4jit can take a layer vLLM's oracle found no experts class
    for, else why not."""
    bits = getattr(getattr(weight_key, "dtype", None), "size_bits", None)
    if bits != 4:
        return f"{bits}-bit experts"
    if config.activation not in _ACTIVATIONS:
        return f"activation {config.activation.value}"
    if config.in_dtype not in _DTYPES:
        return f"activations in {config.in_dtype}"
    if config.moe_parallel_config.use_ep:
        return "expert parallelism"
    return None


def _wrap_oracle(module):
    """Wraps the oracle as `module` (a quant method's) calls it: when vLLM
    has no CPU experts class for the layer and w4jit can take it, answer
    with vLLM's CPU backend as a placeholder and mark the call, so that the
    method's process_weights_after_loading must take the layer."""
    vllm_select = module.select_wna16_moe_backend
    if getattr(vllm_select, "_w4jit_wrapped", False):
        return

    def select_wna16_moe_backend(config, weight_key, *args, **kwargs):
        try:
            return vllm_select(config, weight_key, *args, **kwargs)
        except NotImplementedError as e:
            try:
                why = _oracle_gap_reason(config, weight_key)
            except Exception as gap:  # noqa: BLE001  (vLLM's config moved)
                why = f"{type(gap).__name__}: {gap}"
            if why is not None:
                raise
            from vllm.model_executor.layers.fused_moe.experts.cpu_moe import (
                CPUExpertsInt4)
            say_once("vLLM has no CPU experts class for %s experts (%s); "
                     "w4jit takes them", weight_key, e)
            return _W4jitOnly.backend, _W4jitOnly.mark(CPUExpertsInt4)

    select_wna16_moe_backend._w4jit_wrapped = True
    module.select_wna16_moe_backend = select_wna16_moe_backend


class _W4jitOnly:
    """The placeholder answer of a wrapped oracle: vLLM's CPU backend, and
    an experts class vLLM must never set up (marked, so that take_layer
    knows the layer is w4jit's or an error)."""
    backend = WNA16MoEBackend.CPU
    _marked = {}

    @classmethod
    def mark(cls, experts_cls):
        if experts_cls not in cls._marked:
            cls._marked[experts_cls] = type(
                experts_cls.__name__, (experts_cls,),
                {"_w4jit_only": True, "__module__": experts_cls.__module__})
        return cls._marked[experts_cls]


def _build(fmt, method, layer, mode):
    t = fmt.tensors(method, layer)
    return MoE.from_checkpoint(
        t.pop("fmt"), t.pop("w13_qweight"), t.pop("w13_scales"),
        t.pop("w2_qweight"), t.pop("w2_scales"), **t,
        w13_bias=_bias(layer, "w13_bias"), w2_bias=_bias(layer, "w2_bias"),
        mode=mode, activation=_ACTIVATIONS[layer.activation],
        dtype=_in_dtype(layer), non_finite="propagate")


def _w4jit_only(method):
    """True where vLLM had no CPU experts class of its own for the layer
    (the wrapped oracle's placeholder)."""
    return getattr(getattr(method, "experts_cls", None), "_w4jit_only",
                   False)


def _decide(fmt, method, layer):
    """(the w4jit.MoE, None), or (None, why vLLM's experts keep it)."""
    why = _why_not_common(method, layer) or fmt.why_not(method, layer)
    if why is not None:
        return None, why
    return build_with_fallback(
        lambda mode: _build(fmt, method, layer, mode), "MoE layer")


def take_layer(fmt, method, layer):
    """The w4jit.MoE for this layer, or None after one log line saying
    why vLLM's experts keep it. Where vLLM has no experts class of its own
    for the layer, a layer w4jit cannot take is a ValueError naming why.

    vLLM's compiled mode (its default) runs a warm-up step whose attention
    output is left unwritten, so the router hands the experts garbage (NaN
    routing weights); vLLM's kernels compute garbage rows there and carry
    on. The layer is built with the "propagate" non-finite policy to do the
    same: non-finite rows out, no exception (docs/vllm.md)."""
    try:
        moe, why = _decide(fmt, method, layer)
    except Exception as e:  # noqa: BLE001  (vLLM's objects moved: decline)
        moe, why = None, (f"the layer does not look as the plugin expects "
                          f"({type(e).__name__}: {e})")
    if moe is None:
        if _w4jit_only(method):
            raise ValueError(
                f"w4jit: this {fmt.label} MoE layer has no vLLM CPU experts "
                f"class and w4jit cannot take it either: {why}")
        say_once("%s MoE layer not taken: %s; vLLM's experts (%s) run it",
                 fmt.label, why, getattr(method.experts_cls, "__name__", "?"))
        return None
    chose = getattr(method.experts_cls, "__name__", "?")
    if _w4jit_only(method):
        chose = "no CPU experts class"
    say_once("%s MoE layers run on w4jit (%s, group size %d; vLLM had "
             "chosen %s)", fmt.label, moe.mode, moe.group_size, chose)
    return moe


# The parameters of vLLM's `apply` the plugin reads, by name.
_APPLY_INPUTS = ("x", "topk_weights", "topk_ids")


def _apply_reader(vllm_apply):
    """(args, kwargs) of an `apply(self, layer, ...)` call -> (x,
    topk_weights, topk_ids), by the names of this vLLM's signature, so that
    a call is read right whether vLLM passes them by position or by name.
    Raises AttributeError (at install) where a name is missing."""
    params = list(inspect.signature(vllm_apply).parameters)[2:]
    missing = [n for n in _APPLY_INPUTS if n not in params]
    if missing:
        raise AttributeError(f"{vllm_apply.__qualname__} has no parameter "
                             f"{', '.join(missing)}")
    where = tuple((n, params.index(n)) for n in _APPLY_INPUTS)

    def read(args, kwargs):
        return tuple(kwargs[n] if n in kwargs else args[i] for n, i in where)
    return read


def _check_fits(cls):
    """What _wrap relies on in vLLM's method class, checked before anything
    is wrapped (install() then steps aside with the reason)."""
    for name in ("process_weights_after_loading", "apply"):
        if not callable(getattr(cls, name, None)):
            raise AttributeError(f"{cls.__name__}.{name} is not a method")
    prop = inspect.getattr_static(cls, "is_monolithic", None)
    if not isinstance(prop, property) or prop.fget is None:
        raise AttributeError(f"{cls.__name__}.is_monolithic is not a "
                             "property")
    return _apply_reader(cls.apply)


def _wrap(fmt, cls):
    read_inputs = _check_fits(cls)
    vllm_process = cls.process_weights_after_loading
    vllm_apply = cls.apply
    vllm_is_monolithic = inspect.getattr_static(cls, "is_monolithic").fget

    def process_weights_after_loading(self, layer, *args, **kwargs):
        moe = take_layer(fmt, self, layer)
        if moe is None:
            return vllm_process(self, layer, *args, **kwargs)
        # Not a submodule: vLLM walks the model's modules and parameters.
        layer.__dict__["_w4jit_moe"] = moe
        layer.__dict__["_w4jit_moe_id"] = ops.register(moe)
        self.__dict__["_w4jit_taken"] = True
        free_params(layer, fmt.params)
        return None

    def apply(self, layer, *args, **kwargs):
        layer_id = layer.__dict__.get("_w4jit_moe_id")
        if layer_id is None:
            return vllm_apply(self, layer, *args, **kwargs)
        # The runner has run the shared experts already: on a CPU they are
        # never overlapped with a kernel this method owns (it has none).
        x, topk_weights, topk_ids = read_inputs(args, kwargs)
        return ops.experts(x, topk_ids, topk_weights, layer_id)

    @property
    def is_monolithic(self):
        if self.__dict__.get("_w4jit_taken"):
            return False  # the runner routes; apply gets the top-k
        return vllm_is_monolithic(self)

    cls.process_weights_after_loading = process_weights_after_loading
    cls.apply = apply
    cls.is_monolithic = is_monolithic
    cls._w4jit_wrapped = True


def install():
    """Wraps every MoE method class this vLLM has (once per process)."""
    import importlib
    # Every class first, so that a vLLM missing one wraps none of them.
    classes = [(fmt, getattr(importlib.import_module(fmt.module),
                             fmt.cls_name)) for fmt in FORMATS]
    modules = [importlib.import_module(fmt.module) for fmt in FORMATS]
    for module in modules:
        if not callable(getattr(module, "select_wna16_moe_backend", None)):
            raise AttributeError(f"{module.__name__} has no "
                                 "select_wna16_moe_backend")
    for _, cls in classes:
        _check_fits(cls)
    for fmt, cls in classes:
        if not cls.__dict__.get("_w4jit_wrapped", False):
            _wrap(fmt, cls)
    for module in modules:
        _wrap_oracle(module)
