"""The ops' layer cache: reused while the tensors are the same, rebuilt when
a weight is modified in place or freed and reallocated at the same address,
and never keeps a freed tensor's layer. Inference tensors (no version
counter) are checked as W4JIT_WEIGHT_CHECK says (test_weight_check.py has
each setting's table); the tests here that edit them sparsely in place run
under the content check, which sees every edit."""
import gc

import numpy as np
import pytest
import torch

from reference import assert_close, random_layer, w4a16_reference

N, K, GS = 64, 256, 64


@pytest.fixture(autouse=True)
def _empty_cache():
    torch.ops.w4jit._clear_cache()
    yield
    torch.ops.w4jit._clear_cache()


def check(x, q, scales, y):
    want, mag = w4a16_reference(x, q, scales, None, None)
    assert_close(y, want, mag, x.dtype)


def test_second_call_reuses_the_layer():
    q, scales, _ = random_layer(N, K, GS, False)
    packed = torch.ops.w4jit.woq_repack_weight(q).t()
    x = torch.randn(2, K)
    torch.ops.w4jit.woq_linear(x, packed, scales, None, None)
    torch.ops.w4jit.woq_linear(x, packed, scales, None, None)
    assert torch.ops.w4jit._cache_size() == 1
    # Another activation dtype is another layer (its output dtype differs).
    torch.ops.w4jit.woq_linear(x.bfloat16(), packed, scales, None, None)
    assert torch.ops.w4jit._cache_size() == 2


def test_weight_modified_in_place_is_rebuilt():
    q1, scales, _ = random_layer(N, K, GS, False)
    q2, _, _ = random_layer(N, K, GS, False)
    repacked = torch.ops.w4jit.woq_repack_weight(q1)
    packed = repacked.t()  # a view: shares the version counter
    x = torch.randn(3, K)
    check(x, q1, scales, torch.ops.w4jit.woq_linear(x, packed, scales, None, None))
    repacked.copy_(torch.ops.w4jit.woq_repack_weight(q2))  # through the base
    check(x, q2, scales, torch.ops.w4jit.woq_linear(x, packed, scales, None, None))
    packed.copy_(torch.ops.w4jit.woq_repack_weight(q1).t())  # through the view
    check(x, q1, scales, torch.ops.w4jit.woq_linear(x, packed, scales, None, None))
    assert torch.ops.w4jit._cache_size() == 1  # stale entries replaced


def test_scales_and_bias_modified_in_place_are_rebuilt():
    q, scales, _ = random_layer(N, K, GS, False)
    packed = torch.ops.w4jit.woq_repack_weight(q).t()
    bias = torch.randn(N)
    x = torch.randn(3, K)
    y1 = torch.ops.w4jit.woq_linear(x, packed, scales, None, bias)
    scales.mul_(2)
    bias.add_(1)
    y2 = torch.ops.w4jit.woq_linear(x, packed, scales, None, bias)
    want, mag = w4a16_reference(x, q, scales, None, bias)
    assert_close(y2, want, mag, torch.float32)
    assert not torch.equal(y1, y2)


def test_dynamic_qlinear_weight_modified_in_place_is_rebuilt():
    q1, scales, _ = random_layer(N, K, GS, False)
    q2, _, _ = random_layer(N, K, GS, False)
    packed = torch.ops.w4jit.woq_repack_weight(q1).view(torch.int8)
    s = scales.bfloat16()
    x = torch.randn(3, K).bfloat16()
    torch.ops.w4jit.dynamic_qlinear(x, packed, s, None)
    packed.copy_(torch.ops.w4jit.woq_repack_weight(q2).view(torch.int8))
    y = torch.ops.w4jit.dynamic_qlinear(x, packed, s, None)
    fresh = torch.ops.w4jit.woq_repack_weight(q2).view(torch.int8)
    assert torch.equal(y, torch.ops.w4jit.dynamic_qlinear(x, fresh, s, None))


def test_freed_and_reallocated_at_same_address_is_rebuilt():
    # Deterministic: two storages over the same numpy buffer, one after the
    # other, so the second tensor has exactly the first one's data address.
    q1, scales, _ = random_layer(N, K, GS, False)
    q2, _, _ = random_layer(N, K, GS, False)
    buf = np.empty((N, K // 8), dtype=np.int32)
    x = torch.randn(3, K)
    buf[:] = torch.ops.w4jit.woq_repack_weight(q1).numpy()
    w1 = torch.from_numpy(buf)
    address = w1.data_ptr()
    check(x, q1, scales, torch.ops.w4jit.woq_linear(x, w1.t(), scales, None, None))
    del w1
    gc.collect()
    buf[:] = torch.ops.w4jit.woq_repack_weight(q2).numpy()
    w2 = torch.from_numpy(buf)
    assert w2.data_ptr() == address and w2._version == 0
    check(x, q2, scales, torch.ops.w4jit.woq_linear(x, w2.t(), scales, None, None))


def test_allocator_reuse_of_a_freed_weight_is_rebuilt():
    # The same through torch's allocator: free a weight, allocate another of
    # the same size until one lands at the old address.
    q1, scales, _ = random_layer(N, K, GS, False)
    x = torch.randn(3, K)
    w = torch.ops.w4jit.woq_repack_weight(q1)
    address = w.data_ptr()
    torch.ops.w4jit.woq_linear(x, w.t(), scales, None, None)
    del w
    for _ in range(50):
        q2, _, _ = random_layer(N, K, GS, False)
        w2 = torch.empty(N, K // 8, dtype=torch.int32)
        if w2.data_ptr() == address:
            w2.copy_(torch.ops.w4jit.woq_repack_weight(q2))
            check(x, q2, scales,
                  torch.ops.w4jit.woq_linear(x, w2.t(), scales, None, None))
            return
        del w2
    pytest.skip("the allocator never reused the freed address in 50 tries; "
                "the numpy test above covers the same case deterministically")


def test_freed_tensors_leave_the_cache():
    q, scales, _ = random_layer(N, K, GS, False)
    packed = torch.ops.w4jit.woq_repack_weight(q).t()
    x = torch.randn(1, K)
    torch.ops.w4jit.woq_linear(x, packed, scales, None, None)
    assert torch.ops.w4jit._cache_size() == 1
    del scales  # any one of the tensors going away retires the layer
    gc.collect()
    assert torch.ops.w4jit._cache_size() == 0


# Inference tensors (created under torch.inference_mode()) have no version
# counter; the cache keys them on a fingerprint of their bytes, recomputed
# each call (layer_cache.h).

def _inference_layer(u4=False):
    with torch.inference_mode():
        q, scales, zeros = random_layer(N, K, GS, u4)
        repacked = torch.ops.w4jit.woq_repack_weight(q)
        bias = torch.randn(N)
        x = torch.randn(3, K)
    assert repacked.is_inference() and scales.is_inference()
    return q, scales, zeros, repacked, bias, x


@pytest.mark.parametrize("u4", [False, True])
def test_ops_called_entirely_under_inference_mode(u4):
    with torch.inference_mode():
        q, scales, zeros = random_layer(N, K, GS, u4)
        repacked = torch.ops.w4jit.woq_repack_weight(q)
        bias = torch.randn(N)
        x = torch.randn(3, K)
        a = torch.randn(3, N)
        y = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, zeros, bias)
        y_add = torch.ops.w4jit.woq_linear_add(x, repacked.t(), scales, zeros,
                                               a, bias)
        xb = x.bfloat16()
        s_b = scales.bfloat16()
        y_dq = torch.ops.w4jit.dynamic_qlinear(
            xb, torch.ops.w4jit.woq_repack_weight(
                q if not u4 else q - 8).view(torch.int8), s_b, bias)
        again = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, zeros, bias)
    want, mag = w4a16_reference(x, q, scales, zeros, bias)
    assert_close(y, want, mag, torch.float32)
    assert_close(y_add, want + a.double(), mag + a.double().abs(),
                 torch.float32)
    assert y_dq.dtype == torch.bfloat16 and y_dq.shape == (3, N)
    assert torch.equal(again, y)
    # woq_linear's and woq_linear_add's layers, reused, not rebuilt (the
    # dynamic_qlinear weight was a temporary, so its layer is gone).
    assert torch.ops.w4jit._cache_size() == 2


@pytest.fixture
def content_check():
    before = torch.ops.w4jit.weight_check()
    torch.ops.w4jit.weight_check("content")
    yield
    torch.ops.w4jit.weight_check(before)


def test_inference_weight_modified_in_place_inside_inference_mode(
        content_check):
    q1, scales, _, repacked, bias, x = _inference_layer()
    q2, _, _ = random_layer(N, K, GS, False)
    packed = repacked.t()
    with torch.inference_mode():
        y1 = torch.ops.w4jit.woq_linear(x, packed, scales, None, bias)
        repacked.copy_(torch.ops.w4jit.woq_repack_weight(q2))
        y2 = torch.ops.w4jit.woq_linear(x, packed, scales, None, bias)
        # One nibble of one word: the smallest change there is.
        repacked[5, 3] ^= 1
        y3 = torch.ops.w4jit.woq_linear(x, packed, scales, None, bias)
    want, mag = w4a16_reference(x, q1, scales, None, bias)
    assert_close(y1, want, mag, torch.float32)
    want, mag = w4a16_reference(x, q2, scales, None, bias)
    assert_close(y2, want, mag, torch.float32)
    q3 = q2.clone()
    q3[5, 24] = (q3[5, 24] ^ 1)  # word 3 of row 5 holds k = 24..31
    q3[5, 24] = ((q3[5, 24] + 8) & 0xF) - 8
    fresh = torch.ops.w4jit.woq_repack_weight(q3)
    assert torch.equal(fresh, repacked)
    want, mag = w4a16_reference(x, q3, scales, None, bias)
    assert_close(y3, want, mag, torch.float32)
    assert torch.ops.w4jit._cache_size() == 1  # stale entries replaced


def test_inference_scales_and_bias_modified_in_place():
    q, scales, _, repacked, bias, x = _inference_layer()
    with torch.inference_mode():
        y1 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None, bias)
        scales.mul_(2)
        y2 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None, bias)
        bias.add_(1)
        y3 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None, bias)
    assert not torch.equal(y1, y2)
    want, mag = w4a16_reference(x, q, scales / 2, None, bias - 1)
    assert_close(y1, want, mag, torch.float32)
    want, mag = w4a16_reference(x, q, scales, None, bias - 1)
    assert_close(y2, want, mag, torch.float32)
    want, mag = w4a16_reference(x, q, scales, None, bias)
    assert_close(y3, want, mag, torch.float32)


def test_inference_weights_called_outside_inference_mode():
    # An inference weight changed in one inference-mode block and used
    # outside of one: still the new contents.
    q1, scales, _, repacked, bias, x = _inference_layer()
    q2, _, _ = random_layer(N, K, GS, False)
    y1 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None, bias)
    with torch.inference_mode():
        repacked.copy_(torch.ops.w4jit.woq_repack_weight(q2))
    y2 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None, bias)
    assert_close(y1, *w4a16_reference(x, q1, scales, None, bias),
                 torch.float32)
    assert_close(y2, *w4a16_reference(x, q2, scales, None, bias),
                 torch.float32)


def _content_fingerprints():
    """How many whole-tensor fingerprints the process has computed."""
    return torch.ops.w4jit._fingerprint_counts()[0]


def test_normal_tensors_keep_the_version_counter():
    # Normal weights never need a fingerprint, also when the call is made
    # inside inference mode, and an in-place write there (which bumps their
    # version counter) is still seen.
    q1, scales, _ = random_layer(N, K, GS, False)
    q2, _, _ = random_layer(N, K, GS, False)
    repacked = torch.ops.w4jit.woq_repack_weight(q1)
    x = torch.randn(3, K)
    before = _content_fingerprints()
    with torch.inference_mode():
        y1 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None)
        version = repacked._version
        repacked.copy_(torch.ops.w4jit.woq_repack_weight(q2))
        assert repacked._version > version
        y2 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None)
    y3 = torch.ops.w4jit.woq_linear(x, repacked.t(), scales, None)
    assert _content_fingerprints() == before
    check(x, q1, scales, y1)
    check(x, q2, scales, y2)
    assert torch.equal(y2, y3)
    # An inference tensor costs no full fingerprint under the default check,
    # and one per tensor and call under the content check.
    _, s_inf, _, r_inf, _, _ = _inference_layer()
    torch.ops.w4jit.woq_linear(x, r_inf.t(), s_inf, None)
    torch.ops.w4jit.woq_linear(x, r_inf.t(), s_inf, None)
    assert _content_fingerprints() == before
    torch.ops.w4jit.weight_check("content")
    try:
        torch.ops.w4jit.woq_linear(x, r_inf.t(), s_inf, None)
        torch.ops.w4jit.woq_linear(x, r_inf.t(), s_inf, None)
    finally:
        torch.ops.w4jit.weight_check("sampled")
    assert _content_fingerprints() == before + 4
