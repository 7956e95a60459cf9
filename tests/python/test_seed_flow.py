"""Replays vLLM's zentorch kernel class (docs/torch.md, the host
contract) with torch.ops.w4jit:
compressed-tensors tensors -> unpack -> woq_repack_weight -> woq_linear /
dynamic_qlinear, against float64 references within numerics.md's bounds."""
import pytest
import torch

from w4jit import formats
from reference import (assert_close, da8w4_reference, make_x, random_layer,
                       w4a16_reference)

N, K = 96, 512


def unpack_from_int32(packed, shape):
    """compressed-tensors' unpack_from_int32 for 4 bits packed along K:
    nibbles minus the offset 8, as int8."""
    stored = formats.unpack_compressed_tensors(packed, *shape)
    return (stored - 8).to(torch.int8)


def seed_process_w4a16(q, scales_gn, zeros_gn, scale_dtype):
    """process_weights_after_loading's W4A16 branch; returns the tensors
    apply_weights passes."""
    weight_packed, weight_scale, weight_zero_point = \
        formats.pack_compressed_tensors(q, scales_gn.to(scale_dtype), zeros_gn)
    n, k = q.shape
    unpacked = unpack_from_int32(weight_packed, (n, k))
    u4 = zeros_gn is not None
    if u4:
        unpacked = (unpacked.to(torch.int32) + 8).clamp(0, 15)
    repacked = torch.ops.w4jit.woq_repack_weight.default(
        unpacked.to(torch.int8).contiguous())
    zp_tc = None
    if u4:
        g = scales_gn.shape[0]
        zp_stored = formats._unpack_last(weight_zero_point.t()).t()  # [N, G]
        assert zp_stored.shape == (n, g)
        zp = (zp_stored - 8).to(torch.int8)
        zp = (zp.to(torch.int32) + 8).clamp(0, 15)
        zp_tc = zp.to(torch.int8).t().contiguous()
    return repacked.t(), weight_scale.t().contiguous(), zp_tc


@pytest.mark.parametrize("u4", [False, True], ids=["s4", "u4"])
@pytest.mark.parametrize("group_size", [32, 128, -1])
@pytest.mark.parametrize("has_bias", [False, True], ids=["nobias", "bias"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32],
                         ids=["bf16", "f32"])
@pytest.mark.parametrize("x_shape", [(5, K), (2, 3, K), (1, K)],
                         ids=["2d", "3d", "m1"])
@pytest.mark.parametrize("layout", ["contiguous", "row_slice", "strided"])
def test_woq_linear_seed_flow(u4, group_size, has_bias, dtype, x_shape,
                              layout):
    scale_dtype = torch.bfloat16 if dtype == torch.bfloat16 else torch.float32
    q, scales, zeros = random_layer(N, K, group_size, u4, scale_dtype)
    packed, scale_t, zp = seed_process_w4a16(q, scales, zeros, scale_dtype)
    assert not packed.is_contiguous()  # the seed's transposed view
    bias = torch.randn(N).to(dtype) if has_bias else None
    x = make_x(x_shape, dtype, layout)
    y = torch.ops.w4jit.woq_linear.default(x, packed, scale_t, zp, bias)
    want, mag = w4a16_reference(x, q, scales, zeros, bias)
    assert_close(y, want, mag, dtype)
    # Second call: served from the cache, same result.
    assert torch.equal(
        y, torch.ops.w4jit.woq_linear.default(x, packed, scale_t, zp, bias))


@pytest.mark.parametrize("group_size", [32, 128, -1])
@pytest.mark.parametrize("bias_dtype", [None, torch.bfloat16, torch.float32],
                         ids=["nobias", "bias_bf16", "bias_f32"])
@pytest.mark.parametrize("scale_dtype", [torch.bfloat16, torch.float32],
                         ids=["s_bf16", "s_f32"])
@pytest.mark.parametrize("x_shape", [(5, K), (2, 3, K), (1, K)],
                         ids=["2d", "3d", "m1"])
@pytest.mark.parametrize("layout", ["contiguous", "row_slice", "strided"])
def test_dynamic_qlinear_seed_flow(group_size, bias_dtype, scale_dtype,
                                   x_shape, layout):
    q, scales, _ = random_layer(N, K, group_size, False, torch.float32)
    weight_packed, weight_scale, _ = formats.pack_compressed_tensors(
        q, scales.to(scale_dtype))
    unpacked = unpack_from_int32(weight_packed, (N, K))
    packed = torch.ops.w4jit.woq_repack_weight.default(
        unpacked.to(torch.int8).contiguous()).view(torch.int8)
    scale_t = weight_scale.t().to(torch.bfloat16).contiguous()
    if scale_dtype == torch.float32:
        scale_t = weight_scale.t().contiguous()
    bias = torch.randn(N).to(bias_dtype) if bias_dtype else None
    x = make_x(x_shape, torch.bfloat16, layout)
    y = torch.ops.w4jit.dynamic_qlinear.default(
        x, packed, scale_t, bias.contiguous() if bias is not None else None)
    want, mag = da8w4_reference(x, q, scale_t.float(), None, bias)
    assert_close(y, want, mag, torch.bfloat16)


def test_repack_matches_format_definition():
    q = torch.randint(-8, 8, (16, 64), dtype=torch.int8)
    r = torch.ops.w4jit.woq_repack_weight(q)
    assert r.dtype == torch.int32 and r.shape == (16, 8)
    assert torch.equal(r, formats.repack_int32(q))
    # Nibble k % 8 of word (n, k / 8), two's complement.
    nib = (int(r[3, 2]) >> (4 * 5)) & 0xF
    assert nib == int(q[3, 2 * 8 + 5]) & 0xF
    # u4 values 0..15 pack as is.
    u = torch.randint(0, 16, (16, 64), dtype=torch.int8)
    assert torch.equal(torch.ops.w4jit.woq_repack_weight(u),
                       formats.repack_int32(u))


def test_zentorch_op_name_keyword_binds():
    q, scales, _ = random_layer(32, 64, 32, False)
    r = torch.ops.w4jit.woq_repack_weight(q)
    x = torch.randn(2, 64)
    a = torch.ops.w4jit.woq_linear(x, r.t(), scales, None, None,
                                   zentorch_op_name="zentorch::woq")
    b = torch.ops.w4jit.woq_linear(x, r.t(), scales, None, None)
    assert torch.equal(a, b)
    xb = x.bfloat16()
    c = torch.ops.w4jit.dynamic_qlinear(xb, r.view(torch.int8),
                                        scales.bfloat16(), None,
                                        zentorch_op_name="zentorch::dq")
    assert c.dtype == torch.bfloat16 and c.shape == (2, 32)


@pytest.mark.parametrize("shape", [(0, K), (2, 0, K)])
def test_empty_batch_returns_empty(shape):
    q, scales, _ = random_layer(N, K, 128, False)
    r = torch.ops.w4jit.woq_repack_weight(q)
    x = torch.zeros(shape, dtype=torch.bfloat16)
    y = torch.ops.w4jit.woq_linear(x, r.t(), scales, None, None)
    assert y.shape == (*shape[:-1], N) and y.dtype == torch.bfloat16
    y = torch.ops.w4jit.dynamic_qlinear(x, r.view(torch.int8),
                                        scales.bfloat16(), None)
    assert y.shape == (*shape[:-1], N) and y.dtype == torch.bfloat16


def test_contiguous_transposed_weight_is_the_same_matrix():
    # packed given as a contiguous [K/8, N] copy instead of the t() view.
    q, scales, _ = random_layer(N, K, 64, False)
    r = torch.ops.w4jit.woq_repack_weight(q)
    x = torch.randn(3, K)
    a = torch.ops.w4jit.woq_linear(x, r.t(), scales, None, None)
    b = torch.ops.w4jit.woq_linear(x, r.t().contiguous(), scales, None, None)
    assert torch.equal(a, b)


def test_dynamic_qlinear_act_quant_per_group():
    """w4jit's keyword act_quant: per-group activation scales, far more
    accurate than per-token ones when x has outlier channels."""
    n, k, g = 64, 1024, 128
    q, scales, _ = random_layer(n, k, g, False)
    r = torch.ops.w4jit.woq_repack_weight(q)
    torch.manual_seed(3)
    x = torch.randn(4, k)
    x[:, torch.randperm(k)[:4]] *= 50
    xb = x.bfloat16()
    w = q.double() * scales.bfloat16().double().repeat_interleave(g, 0).t()
    want = xb.double() @ w.t()

    def err(act_quant):
        y = torch.ops.w4jit.dynamic_qlinear(xb, r.view(torch.int8),
                                            scales.bfloat16(), None,
                                            act_quant=act_quant)
        return ((y.double() - want).norm() / want.norm()).item()

    default = torch.ops.w4jit.dynamic_qlinear(xb, r.view(torch.int8),
                                              scales.bfloat16(), None)
    assert torch.equal(default, torch.ops.w4jit.dynamic_qlinear(
        xb, r.view(torch.int8), scales.bfloat16(), None,
        act_quant="per_token"))
    assert err("per_group") * 1.5 < err("per_token")
    with pytest.raises(RuntimeError, match="act_quant 'per_row'"):
        torch.ops.w4jit.dynamic_qlinear(xb, r.view(torch.int8),
                                        scales.bfloat16(), None,
                                        act_quant="per_row")


def test_linear_act_quant_per_group():
    import w4jit
    q, scales, _ = random_layer(32, 256, 64, False)
    lin = w4jit.Linear.from_unpacked(q, scales, mode="da8w4",
                                     act_quant="per_group")
    assert lin.act_quant == "per_group"
    assert any("_agroup" in n for n in lin.kernel_names())
    assert lin(torch.randn(3, 256).bfloat16()).shape == (3, 32)
    with pytest.raises(RuntimeError, match="per_group"):
        w4jit.Linear.from_unpacked(q, scales, mode="w4a16",
                                   act_quant="per_group")
