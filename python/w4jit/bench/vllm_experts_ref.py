"""A pure-torch model of the locally made MoE checkpoints' experts
(vllm_models), the reference that exists on every CPU: vLLM's own int4
experts need AMX, zentorch's need AVX512_BF16, this needs neither.

The checkpoint's integers and scales are made again from the same seed by
the same round-to-nearest quantizer that wrote them, and dequantized in
f32, (q - z) * s per group; the experts then run as plain matmuls. Nothing
of w4jit (its unpackers, its kernels) is involved, so a w4jit result that
agrees with this one read the checkpoint right and computed it right.
"""
import re

import torch

from . import vllm_models

_EXPERT = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\."
                     r"(gate|up|down)_proj\.weight")
_ROUTER = re.compile(r"model\.layers\.(\d+)\.mlp\.gate\.weight")


def symmetric(variant):
    """Whether a vllm_models variant's experts are stored without zero
    points (compressed-tensors symmetric, GPTQ) or with them."""
    return not (variant.endswith("-asym") or variant.startswith("awq-"))


def _dequantized(w, sym):
    q, s, z = vllm_models.quantize(w, sym)  # q [N, K], s and z [G, N]
    n, k = q.shape
    g = s.shape[0]
    q = q.float().reshape(n, g, k // g)
    if z is not None:
        q = q - z.t().float().unsqueeze(-1)
    return (q * s.t().float().unsqueeze(-1)).reshape(n, k)


def experts(shape, seed, variant):
    """{layer index: (w13 [E, 2I, H], w2 [E, H, I])} in f32, gate rows
    first in w13 as vLLM stacks them."""
    sym = symmetric(variant)
    found = {}
    for name, w, _ in vllm_models._tensors(vllm_models.SHAPES[shape], seed):
        m = _EXPERT.fullmatch(name)
        if m:
            layer, e, proj = int(m[1]), int(m[2]), m[3]
            found.setdefault(layer, {})[(e, proj)] = _dequantized(w, sym)
    out = {}
    for layer, ws in found.items():
        count = 1 + max(e for e, _ in ws)
        w13 = torch.stack([torch.cat([ws[(e, "gate")], ws[(e, "up")]])
                           for e in range(count)])
        w2 = torch.stack([ws[(e, "down")] for e in range(count)])
        out[layer] = (w13, w2)
    return out


def router_gates(shape, seed):
    """{layer index: the router gate [E, H]} in f32 (stored in bf16, never
    quantized)."""
    return {int(m[1]): w.float()
            for name, w, _ in vllm_models._tensors(vllm_models.SHAPES[shape],
                                                   seed)
            if (m := _ROUTER.fullmatch(name))}


def moe(x, topk_ids, topk_weights, w13, w2):
    """y[t] = sum_j w[t, j] * down_e(silu(gate_e(x[t])) * up_e(x[t])) in
    f32, e = topk_ids[t, j]."""
    x = x.float()
    y = torch.zeros(x.shape[0], w2.shape[1])
    inter = w13.shape[1] // 2
    for t in range(x.shape[0]):
        for e, wt in zip(topk_ids[t].tolist(), topk_weights[t].float()):
            h = w13[e] @ x[t]
            a = torch.nn.functional.silu(h[:inter]) * h[inter:]
            y[t] += wt * (w2[e] @ a)
    return y


def relative_error(got, want):
    """||got - want|| / ||want|| over the rows whose inputs were finite
    (rows of garbage input are garbage on every kernel)."""
    got = got.float()
    rows = torch.isfinite(want).all(-1)
    if not bool(rows.any()):
        return 0.0
    diff = (got[rows] - want[rows]).norm()
    return float(diff / want[rows].norm().clamp_min(1e-30))
