"""torch.classes.w4jit.Linear and the w4jit.Linear module, from every
checkpoint format, against the float64 references."""
import pytest
import torch

import w4jit
from w4jit import formats
from reference import (assert_close, da8w4_reference, random_layer,
                       w4a16_reference)

N, K = 64, 512


def build(fmt, q, scales, zeros, bias, **kw):
    """A w4jit.Linear for (q, scales [G,N], zeros [G,N]) stored in `fmt`."""
    if fmt == "compressed_tensors":
        packed, scale, zp = formats.pack_compressed_tensors(q, scales, zeros)
        return w4jit.Linear.from_compressed_tensors(packed, scale, zp, bias,
                                                   **kw)
    if fmt in ("gptq_v1", "gptq_v2"):
        version = int(fmt[-1])
        qweight, qzeros, s = formats.pack_gptq(q, scales, zeros, version)
        return w4jit.Linear.from_gptq(qweight, qzeros, s, bias=bias,
                                      version=version, **kw)
    if fmt == "awq":
        qweight, qzeros, s = formats.pack_awq(q, scales, zeros)
        return w4jit.Linear.from_awq(qweight, qzeros, s, bias, **kw)
    if fmt == "unpacked_int8":
        return w4jit.Linear.from_unpacked(q, scales, zeros, bias, **kw)
    if fmt == "unpacked_int8_ng":
        zt = zeros.t().contiguous() if zeros is not None else None
        return w4jit.Linear.from_unpacked(q, scales.t().contiguous(), zt,
                                          bias, groups_major=False, **kw)
    if fmt == "zentorch_int32":
        r = torch.ops.w4jit.woq_repack_weight(q)
        return w4jit.Linear.from_zentorch(r, scales, zeros, bias, **kw)
    raise AssertionError(fmt)


FORMATS = ["compressed_tensors", "gptq_v1", "gptq_v2", "awq",
           "unpacked_int8", "unpacked_int8_ng", "zentorch_int32"]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("u4", [False, True], ids=["s4", "u4"])
@pytest.mark.parametrize("mode", ["w4a16", "da8w4"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32],
                         ids=["bf16", "f32"])
@pytest.mark.parametrize("group_size", [64, -1])
def test_every_format(fmt, u4, mode, dtype, group_size):
    q, scales, zeros = random_layer(N, K, group_size, u4, torch.float16)
    bias = torch.randn(N).to(dtype)
    lin = build(fmt, q, scales, zeros, bias, mode=mode, dtype=dtype)
    assert (lin.in_features, lin.out_features) == (K, N)
    assert lin.group_size == group_size
    x = torch.randn(2, 3, K).to(dtype)
    y = lin(x)
    ref = w4a16_reference if mode == "w4a16" else da8w4_reference
    want, mag = ref(x, q, scales, zeros, bias)
    assert_close(y, want, mag, dtype)
    assert lin.packed_bytes() > 0 and lin.kernel_names()


def test_layer_outlives_its_source_tensors():
    q, scales, _ = random_layer(N, K, 128, False)
    packed, scale, _ = formats.pack_compressed_tensors(q, scales)
    lin = w4jit.Linear.from_compressed_tensors(packed, scale,
                                               dtype=torch.float32)
    packed.zero_()  # the layer copied what it needs
    del packed, scale
    x = torch.randn(4, K)
    want, mag = w4a16_reference(x, q, scales, None, None)
    assert_close(lin(x), want, mag, torch.float32)


def test_gptq_identity_g_idx_accepted():
    q, scales, zeros = random_layer(N, K, 128, True)
    qweight, qzeros, s = formats.pack_gptq(q, scales, zeros, 1)
    g_idx = (torch.arange(K) // 128).to(torch.int32)
    lin = w4jit.Linear.from_gptq(qweight, qzeros, s, g_idx,
                                 dtype=torch.float32)
    x = torch.randn(2, K)
    want, mag = w4a16_reference(x, q, scales, zeros, None)
    assert_close(lin(x), want, mag, torch.float32)
    # Act-order (any order with full groups) is test_act_order.py's.
    w4jit.Linear.from_gptq(qweight, qzeros, s, g_idx.flip(0))


def test_module_behaves_like_a_module():
    q, scales, _ = random_layer(N, K, 128, False)
    lin = w4jit.Linear.from_unpacked(q, scales)
    assert "in_features=512" in repr(lin)
    seq = torch.nn.Sequential(lin, torch.nn.ReLU())
    y = seq(torch.randn(3, K).bfloat16())
    assert y.shape == (3, N) and (y >= 0).all()
    assert lin(torch.zeros(0, K).bfloat16()).shape == (0, N)
