"""w4jit for PyTorch: JIT-generated int4-weight linear layers (W4A16, DA8W4).

Importing this package loads libw4jit_torch.so into torch, which registers

- torch.ops.w4jit.woq_repack_weight / woq_linear (and its post-op family) /
  dynamic_qlinear: drop-in replacements for the zentorch ops of the same
  names (zentorch's schemas, held in w4jit.zentorch_contract, and results;
  weights are repacked into w4jit layers on first use and cached, inference
  tensors included);
- torch.classes.w4jit.Linear: a layer built once from a checkpoint's own
  tensors, wrapped by the nn.Module w4jit.Linear;
- torch.ops.w4jit.fused_moe (zentorch's / vLLM's fused-MoE arguments) and
  torch.classes.w4jit.MoE, a fused top-k MoE layer built once from a
  checkpoint's expert tensors, wrapped by the nn.Module w4jit.MoE.

Threads: w4jit runs on ATen's intra-op pool, so torch.set_num_threads()
governs it.
"""
import torch

from . import _library

_library.load()

from .linear import Linear  # noqa: E402  (needs the library loaded)
from .moe import MoE  # noqa: E402

woq_repack_weight = torch.ops.w4jit.woq_repack_weight
woq_linear = torch.ops.w4jit.woq_linear
dynamic_qlinear = torch.ops.w4jit.dynamic_qlinear
library_path = _library.library_path

__all__ = ["Linear", "MoE", "woq_repack_weight", "woq_linear", "dynamic_qlinear",
           "library_path"]
