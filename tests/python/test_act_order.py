"""GPTQ act-order through torch: w4jit.Linear from checkpoints whose g_idx
permutes K, against a float64 reference built from the checkpoint as it is
(dense W[n][k] with the group g_idx[k]), both modes, bf16/f32."""
import pytest
import torch

import w4jit
from w4jit import formats
from reference import (assert_close, int4_kernel_terms, quantize_rows,
                       random_layer)

N, K, GS = 64, 512, 128
G = K // GS


def act_order_checkpoint(u4, seed):
    """-> (q_ckpt int8 [N, K] in checkpoint order, scales [G, N], zeros
    [G, N] or None, g_idx int32 [K]) with every group of GS channels
    scattered over K."""
    torch.manual_seed(seed)
    q, scales, zeros = random_layer(N, K, GS, u4, torch.float16)
    perm = torch.randperm(K)  # channel perm[j] holds contiguous column j
    q_ckpt = torch.empty_like(q)
    q_ckpt[:, perm] = q
    g_idx = torch.empty(K, dtype=torch.int32)
    g_idx[perm] = (torch.arange(K) // GS).to(torch.int32)
    return q_ckpt, scales, zeros, g_idx


def reference(mode, x, q, scales, zeros, g_idx, bias):
    """(y f64, T f64): W4A16 x . W^T with W[n, k] = (q - z[g_idx[k], n]) *
    s[g_idx[k], n]; DA8W4 its exact integer definition with groups
    {k : g_idx[k] = g}."""
    gi = g_idx.long()
    w = q.double()
    if zeros is not None:
        w = w - zeros.double()[gi].t()
    s = scales.double()  # [G, N]
    if mode == "w4a16":
        wd = w * s[gi].t()
        xd = x.double()
        y, mag = xd @ wd.t(), xd.abs() @ wd.abs().t()
        if zeros is not None:
            mag = mag + int4_kernel_terms(x, q, zeros.double()[gi].t(),
                                          s[gi].t())
        else:
            mag = mag + int4_kernel_terms(x, q.double() + 8, 8.0, s[gi].t())
    else:
        qa, sa = quantize_rows(x)
        onehot = torch.nn.functional.one_hot(gi, G).double()  # [K, G]
        # acc[..., n, g] = sum_{k in g} qa[k] * w[n, k], exact in f64.
        acc = torch.einsum("...k,nk,kg->...ng", qa, w, onehot)
        y = sa * (acc * s.t()).sum(-1)
        mag = sa * (acc * s.t()).abs().sum(-1)
    if bias is not None:
        y, mag = y + bias.double(), mag + bias.double().abs()
    return y, mag


def build(fmt, q, scales, zeros, g_idx, bias, **kw):
    if fmt in ("gptq_v1", "gptq_v2"):
        version = int(fmt[-1])
        qweight, qzeros, s = formats.pack_gptq(q, scales, zeros, version)
        return w4jit.Linear.from_gptq(qweight, qzeros, s, g_idx, bias,
                                      version=version, **kw)
    if fmt == "compressed_tensors":
        packed, scale, zp = formats.pack_compressed_tensors(q, scales, zeros)
        return w4jit.Linear.from_compressed_tensors(
            packed, scale, zp, bias, weight_g_idx=g_idx, **kw)
    assert fmt == "unpacked_int8", fmt
    return w4jit.Linear.from_unpacked(q, scales, zeros, bias, g_idx=g_idx,
                                      **kw)


@pytest.mark.parametrize("fmt", ["gptq_v1", "gptq_v2", "compressed_tensors",
                                 "unpacked_int8"])
@pytest.mark.parametrize("u4", [False, True], ids=["s4", "u4"])
@pytest.mark.parametrize("mode", ["w4a16", "da8w4"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32],
                         ids=["bf16", "f32"])
def test_act_order_matches_checkpoint_reference(fmt, u4, mode, dtype):
    q, scales, zeros, g_idx = act_order_checkpoint(u4, seed=len(fmt) + 50 * u4)
    bias = torch.randn(N).to(dtype)
    lin = build(fmt, q, scales, zeros, g_idx, bias, mode=mode, dtype=dtype)
    for m in (1, 5, 40):  # GEMV, small tiles, GEMM / panels
        x = torch.randn(m, K).to(dtype)
        want, mag = reference(mode, x, q, scales, zeros, g_idx, bias)
        assert_close(lin(x), want, mag, dtype)


def test_act_order_differs_from_ignoring_g_idx():
    """The permutation matters: the same tensors without g_idx give another
    layer (so the test above would notice g_idx being dropped)."""
    q, scales, zeros, g_idx = act_order_checkpoint(True, seed=3)
    qweight, qzeros, s = formats.pack_gptq(q, scales, zeros, 1)
    x = torch.randn(2, K)
    with_g = w4jit.Linear.from_gptq(qweight, qzeros, s, g_idx,
                                    dtype=torch.float32)(x)
    without = w4jit.Linear.from_gptq(qweight, qzeros, s,
                                     dtype=torch.float32)(x)
    assert (with_g - without).abs().max() > 1e-3


def test_uneven_groups_are_refused_naming_the_group():
    q, scales, zeros, g_idx = act_order_checkpoint(False, seed=4)
    qweight, qzeros, s = formats.pack_gptq(q, scales, zeros, 1)
    bad = g_idx.clone()
    bad[bad == 2] = 1  # group 1 gets 256 members, group 2 none
    with pytest.raises(RuntimeError, match=f"g_idx gives group 1 {2 * GS} members"):
        w4jit.Linear.from_gptq(qweight, qzeros, s, bad)
    bad = g_idx.clone()
    bad[7] = -3
    with pytest.raises(RuntimeError, match=r"g_idx\[7\] = -3 is not a group"):
        w4jit.Linear.from_gptq(qweight, qzeros, s, bad)


def test_awq_takes_no_g_idx():
    q, scales, zeros, g_idx = act_order_checkpoint(True, seed=5)
    qweight, qzeros, s = formats.pack_awq(q, scales, zeros)
    with pytest.raises(RuntimeError, match="not meaningful for awq"):
        w4jit.Linear.from_checkpoint("awq", qweight, s, qzeros, g_idx)
