"""vLLM's compressed-tensors int4 MoE experts on w4jit.

vLLM chooses MoE experts from a closed list inside its WNA16 MoE oracle
(no registry a plugin can add to), so this hooks one level up, at the quant
method: CompressedTensorsWNA16MoEMethod's process_weights_after_loading and
apply are wrapped. When vLLM has chosen a modular CPU backend (its own
CPUExpertsInt4 on AMX machines) and the layer is one w4jit.MoE takes
(4-bit groups, SiLU, no expert bias, every expert resident), the checkpoint's
expert tensors become one w4jit.MoE and vLLM's repacking is skipped; apply
then runs it on the router's top-k. Any other layer runs as vLLM set it up,
after one log line naming why.
"""
import torch
from vllm.model_executor.layers.fused_moe.activation import MoEActivation
from vllm.model_executor.layers.fused_moe.oracle.int_wna16 import (
    WNA16MoEBackend,
)
from vllm.model_executor.layers.quantization.compressed_tensors.\
    compressed_tensors_moe import compressed_tensors_moe_wna16 as ct_moe

from ..moe import MoE
from .linear_kernel import mode_from_env, say_once

_PARAMS = ("w13_weight_packed", "w2_weight_packed", "w13_weight_scale",
           "w2_weight_scale", "w13_weight_zero_point", "w2_weight_zero_point")


def _why_not(method, layer):
    """None when w4jit takes the layer, else the reason."""
    if method.wna16_backend not in (WNA16MoEBackend.CPU,
                                    WNA16MoEBackend.ZEN_CPU):
        return f"vLLM chose its {method.wna16_backend.value} MoE backend"
    if method.experts_cls.is_monolithic():
        return (f"vLLM chose {method.experts_cls.__name__}, which routes "
                "inside the kernel")
    if method.num_bits != 4:
        return f"{method.num_bits}-bit experts"
    if method.strategy != "group":
        return f"strategy {method.strategy!r} (w4jit's MoE takes groups)"
    if layer.activation != MoEActivation.SILU:
        return f"activation {layer.activation}"
    if getattr(layer, "w13_bias", None) is not None:
        return "expert bias"
    if getattr(layer, "expert_map", None) is not None:
        return "expert parallelism (not every expert on this rank)"
    if getattr(layer, "apply_router_weight_on_input", False):
        return "router weights applied on the input"
    return None


def _build(method, layer, mode):
    zp = {}
    if not method.symmetric:
        zp = dict(w13_weight_zero_point=layer.w13_weight_zero_point.data,
                  w2_weight_zero_point=layer.w2_weight_zero_point.data)
    return MoE.from_compressed_tensors(
        layer.w13_weight_packed.data, layer.w13_weight_scale.data,
        layer.w2_weight_packed.data, layer.w2_weight_scale.data, **zp,
        group_size=method.group_size, mode=mode, activation="silu",
        dtype=layer.w13_weight_scale.dtype)


def install():
    cls = ct_moe.CompressedTensorsWNA16MoEMethod
    if getattr(cls, "_w4jit_wrapped", False):
        return
    vllm_process = cls.process_weights_after_loading
    vllm_apply = cls.apply

    def process_weights_after_loading(self, layer):
        why = _why_not(self, layer)
        moe = None
        if why is None:
            mode = mode_from_env()
            try:
                moe = _build(self, layer, mode)
            except (RuntimeError, ValueError) as e:
                why = f"w4jit refused it ({e})"
        if moe is None:
            say_once("MoE layer not taken: %s; vLLM's experts run it", why)
            return vllm_process(self, layer)
        layer.__dict__["_w4jit_moe"] = moe
        for name in _PARAMS:
            param = getattr(layer, name, None)
            if param is not None:
                param.data = torch.empty(0, dtype=param.dtype)
        say_once("compressed-tensors MoE layers run on w4jit (%s, group "
                 "size %d)", moe.mode, moe.group_size)

    def apply(self, layer, x, topk_weights, topk_ids, shared_experts,
              shared_experts_input):
        moe = getattr(layer, "_w4jit_moe", None)
        if moe is None:
            return vllm_apply(self, layer, x, topk_weights, topk_ids,
                              shared_experts, shared_experts_input)
        if shared_experts is not None:
            raise NotImplementedError(
                "w4jit's MoE path was given shared experts to run; set "
                "W4JIT_VLLM_MOE=0 for this model")
        return moe(x, topk_ids, topk_weights)

    cls.process_weights_after_loading = process_weights_after_loading
    cls.apply = apply
    cls._w4jit_wrapped = True
