"""W4jitWNA16LinearKernel: vLLM's CPU int4 linear layers on w4jit.

A vLLM MPLinearKernel (the class vLLM picks per int4 linear layer from its
per-platform list, `_POSSIBLE_KERNELS`), subclassing vLLM's own
CPUWNA16LinearKernel so that every layer w4jit does not take goes through
vLLM's kernel unchanged. Each layer w4jit takes becomes one w4jit.Linear,
built once from the checkpoint's own tensors after vLLM has loaded them;
vLLM's copies are then freed.
"""
import torch
from vllm.model_executor.kernels import linear as vllm_linear
from vllm.model_executor.kernels.linear.mixed_precision.cpu import (
    CPUWNA16LinearKernel,
)
from vllm.platforms import PlatformEnum, current_platform
from vllm.scalar_type import scalar_types

from ..linear import Linear
from . import ops
from ._common import (build_with_fallback, free_params, say_once,
                      vllm_int4_gemm_missing)

# vLLM's int4 weight types: uint4b8 is symmetric (q + 8 stored, no zero
# points), uint4 has zero points.
_INT4_TYPES = (scalar_types.uint4b8, scalar_types.uint4)
_ACT_TYPES = (torch.bfloat16, torch.float32)


def _checkpoint_format(w_q):
    """vLLM's parameter attributes say how the int32 words are packed."""
    input_dim = getattr(w_q, "input_dim", None)
    packed_dim = getattr(w_q, "packed_dim", None)
    if input_dim == packed_dim == 1:
        return "compressed_tensors"  # [N, K/8], scales [N, G]
    if input_dim == packed_dim == 0:
        return "gptq_v2"  # [K/8, N], scales [G, N]
    return None


def _zero_points(w_zp, fmt):
    """The zero-point words as `fmt` lays them out. vLLM converts an AWQ
    layer (auto_awq's _convert_awq_to_standard_format) to GPTQ's [K/8, N]
    weight words but compressed-tensors' [N/8, G] zero points (packed_dim 0
    along N); GPTQ's own are [G, N/8], the same words transposed."""
    if w_zp is None:
        return None
    if (fmt == "gptq_v2" and getattr(w_zp, "packed_dim", None) == 0 and
            getattr(w_zp, "output_dim", None) == 0):
        return w_zp.data.t().contiguous()
    return w_zp.data


class W4jitWNA16LinearKernel(CPUWNA16LinearKernel):
    """int4 weights (symmetric or with zero points, any group size dividing
    K) and bf16 / f32 activations, W4A16 or DA8W4."""

    @classmethod
    def can_implement(cls, c):
        reason = None
        if not current_platform.is_cpu():
            reason = "vLLM's platform is not a CPU"
        elif c.weight_type not in _INT4_TYPES:
            reason = f"weight type {c.weight_type} is not int4"
        elif c.act_type not in _ACT_TYPES:
            reason = f"activation dtype {c.act_type} is not bf16 or f32"
        elif c.group_size != -1 and (c.group_size <= 0 or
                                     c.partition_weight_shape[0] %
                                     c.group_size):
            reason = (f"group size {c.group_size} does not divide K = "
                      f"{c.partition_weight_shape[0]}")
        elif c.partition_weight_shape[0] % 8:
            reason = (f"K = {c.partition_weight_shape[0]} is not a multiple "
                      "of 8")
        if reason is not None:
            say_once("%s; this layer stays on vLLM's kernel", reason)
            return False, reason
        return True, None

    def _build(self, layer, fmt, mode):
        w_q = getattr(layer, self.w_q_name)
        w_s = getattr(layer, self.w_s_name)
        w_zp = None
        if self.config.zero_points and self.w_zp_name:
            w_zp = getattr(layer, self.w_zp_name, None)
        return Linear.from_checkpoint(
            fmt, w_q.data, w_s.data, _zero_points(w_zp, fmt), None, None,
            mode=mode, dtype=self.config.act_type)

    def _vllms_kernel(self, layer, why):
        """Hands the layer to vLLM's CPUWNA16LinearKernel, or raises at load
        where vLLM's op library for this CPU has no int4 GEMM to run it."""
        missing = vllm_int4_gemm_missing()
        if missing is not None:
            raise ValueError(f"w4jit: {why}, and {missing}, so nothing can "
                             "run this layer")
        say_once("%s; vLLM's kernel runs it", why)
        super().process_weights_after_loading(layer)

    def process_weights_after_loading(self, layer):
        w_q = getattr(layer, self.w_q_name)
        fmt = _checkpoint_format(w_q)
        if fmt is None:
            self._vllms_kernel(
                layer, f"int4 weights packed along N (input_dim "
                f"{getattr(w_q, 'input_dim', None)}, packed_dim "
                f"{getattr(w_q, 'packed_dim', None)}) are not a layout w4jit "
                "reads here")
            return
        impl, why = build_with_fallback(
            lambda mode: self._build(layer, fmt, mode), "int4 layer")
        if impl is None:
            self._vllms_kernel(layer, f"int4 layer not taken: {why}")
            return
        # Not a submodule: vLLM walks the model's modules and parameters.
        layer.__dict__["_w4jit"] = impl
        layer.__dict__["_w4jit_id"] = ops.register(impl)
        free_params(layer, (self.w_q_name, self.w_s_name, self.w_zp_name))
        say_once("%s %s layers run on w4jit (group size %d)", fmt, impl.mode,
                 impl.group_size)

    def apply_weights(self, layer, x, bias=None):
        layer_id = layer.__dict__.get("_w4jit_id")
        if layer_id is None:
            return super().apply_weights(layer, x, bias)
        y = ops.linear(x, layer_id)  # a custom op when vLLM compiles
        return y if bias is None else y + bias


def install():
    """Puts the kernel first in vLLM's CPU list (once; vLLM reads the list
    at every layer it builds)."""
    kernels = vllm_linear._POSSIBLE_KERNELS.setdefault(PlatformEnum.CPU, [])
    if W4jitWNA16LinearKernel not in kernels:
        kernels.insert(0, W4jitWNA16LinearKernel)
