"""The op caches read no weight bytes per call in the steady state, for
normal and inference tensors alike (issue: the host's inference_mode made
every call re-read its whole weight), and what each W4JIT_WEIGHT_CHECK
setting sees of an in-place edit of an inference tensor.

The steady-state test counts bytes (torch.ops.w4jit._fingerprint_counts),
never time: [content fingerprints, bytes they read, sampled fingerprints,
bytes they read]."""
import pytest
import torch

import w4jit  # noqa: F401
from reference import (assert_close, random_layer, stacked_experts,
                       w4a16_reference)

OPS = torch.ops.w4jit
N, K, GS = 256, 512, 64
CALLS = 1000
# The tripwire's bound: 8 lines of 64 bytes per tensor argument.
SAMPLE_BYTES = 8 * 64


@pytest.fixture(autouse=True)
def _fresh_cache_and_default_check():
    OPS._clear_cache()
    before = OPS.weight_check()
    OPS.weight_check("sampled")
    yield
    OPS.weight_check(before)
    OPS._clear_cache()


def _counts():
    c = OPS._fingerprint_counts()
    return {"content_calls": c[0], "content_bytes": c[1],
            "sampled_calls": c[2], "sampled_bytes": c[3]}


def _linear_calls():
    """(name, tensor arguments per call, call) for every linear op and
    overload, with weights made under inference_mode (as zentorch's tests
    and scripts that load a model there do)."""
    q, s, z = random_layer(N, K, GS, True)
    qs, ss, _ = random_layer(N, K, GS, False)
    packed = OPS.woq_repack_weight(q)
    packed_s = OPS.woq_repack_weight(qs)
    bias = torch.randn(N)
    x = torch.randn(1, K)
    xb = x.bfloat16()
    sb = ss.bfloat16()
    a1, a2 = torch.randn(1, N), torch.randn(1, N)
    out = torch.empty(1, N)
    outb = torch.empty(1, N, dtype=torch.bfloat16)
    # torchao's tinygemm pack, as the int4pack path gets it: float zero
    # points (bf16 scales and zeros [G, N]).
    zf = (torch.rand(K // GS, N) - 0.5).bfloat16()
    calls = [
        ("woq_linear", 4,
         lambda: OPS.woq_linear(x, packed.t(), s, z, bias)),
        ("woq_linear float zeros", 3,
         lambda: OPS.woq_linear(xb, packed.t(), sb, zf, None)),
        ("woq_linear.out", 4,
         lambda: OPS.woq_linear.out(x, packed.t(), s, z, bias, out=out)),
        ("dynamic_qlinear int8 [N, K/2] (per-call view)", 2,
         lambda: OPS.dynamic_qlinear(xb, packed_s.view(torch.int8), sb)),
        ("dynamic_qlinear per_group", 3,
         lambda: OPS.dynamic_qlinear(xb, packed_s, sb, bias,
                                     act_quant="per_group")),
        ("dynamic_qlinear.out (per-call view)", 2,
         lambda: OPS.dynamic_qlinear.out(xb, packed_s.view(torch.int8), sb,
                                         out=outb)),
    ]
    for post in ("relu", "sigmoid", "gelu_tanh", "gelu_erf"):
        op = getattr(OPS, f"woq_linear_{post}")
        calls.append((f"woq_linear_{post}", 4,
                      lambda op=op: op(x, packed.t(), s, z, bias)))
    calls += [
        ("woq_linear_add", 4,
         lambda: OPS.woq_linear_add(x, packed.t(), s, z, a1, bias)),
        ("woq_linear_mul_add", 4,
         lambda: OPS.woq_linear_mul_add(x, packed.t(), s, z, a1, a2, bias)),
        ("woq_linear_add_add", 4,
         lambda: OPS.woq_linear_add_add(x, packed.t(), s, z, a1, a2, bias)),
        ("woq_linear_add_add.out", 4,
         lambda: OPS.woq_linear_add_add.out(x, packed.t(), s, z, a1, a2,
                                            bias, out=out)),
    ]
    return calls


def _moe_call():
    e, h, i, gs, t, k = 8, 128, 64, 32, 1, 2
    _, _, p13, p2, s13, s2 = stacked_experts(e, h, i, gs)
    s13, s2 = s13.bfloat16(), s2.bfloat16()
    b13 = torch.randn(e, 2 * i).bfloat16()
    b2 = torch.randn(e, h).bfloat16()
    x = torch.randn(t, h).bfloat16()
    ids = torch.tensor([[1, 5]], dtype=torch.int32)
    weights = torch.rand(t, k)
    out = torch.empty(t, h, dtype=torch.bfloat16)

    def call():  # vLLM's positional call, with biases (gpt-oss's form)
        OPS.fused_moe(out, x, p13.view(torch.int8), p2.view(torch.int8), b13,
                      b2, weights, ids, False, "silu", s13, s2)

    def functional():
        OPS.fused_moe_functional(x, p13, p2, b13, b2, weights, ids, False,
                                 "silu", s13, s2, mode="w4a16")
    return [("fused_moe", 6, call), ("fused_moe_functional", 6, functional)]


@pytest.mark.parametrize("numerics", ["exact", "zentorch"])
def test_no_weight_read_per_call_under_inference_mode(numerics, monkeypatch):
    monkeypatch.setenv("W4JIT_NUMERICS", numerics)
    with torch.inference_mode():
        calls = _linear_calls() + _moe_call()
        for name, tensors, call in calls:
            call()  # builds the layer (its one fingerprint per tensor)
            before = _counts()
            layers = OPS._cache_size()
            for _ in range(CALLS):
                call()
            after = _counts()
            # The layer was found, never rebuilt.
            assert OPS._cache_size() == layers, name
            # No pass over any tensor's bytes...
            assert after["content_calls"] == before["content_calls"], name
            assert after["content_bytes"] == before["content_bytes"], name
            # ...only the tripwire's few lines, independent of the size.
            read = after["sampled_bytes"] - before["sampled_bytes"]
            assert read <= CALLS * tensors * SAMPLE_BYTES, (name, read)


def _assert_nothing_read(calls, views_sampled=False):
    """100 calls of each read nothing; with views_sampled, a per-call view
    made inside inference mode (an inference tensor even of a normal one:
    torch gives it no version counter) may cost the tripwire's lines, once
    per call, never a whole read."""
    for name, _, call in calls:
        call()
        before = _counts()
        for _ in range(100):
            call()
        after = _counts()
        if views_sampled and "per-call view" in name:
            assert after["content_bytes"] == before["content_bytes"], name
            assert (after["sampled_bytes"] - before["sampled_bytes"] <=
                    100 * SAMPLE_BYTES), name
        else:
            assert after == before, name


def test_identity_check_reads_nothing_and_normal_tensors_never_do():
    OPS.weight_check("identity")
    with torch.inference_mode():
        calls = _linear_calls()
    for mode in (torch.inference_mode, torch.no_grad):
        with mode():
            _assert_nothing_read(calls)
    # Normal tensors (made outside inference mode) under the default check:
    # their version counters, never a read.
    OPS.weight_check("sampled")
    calls = _linear_calls()
    with torch.inference_mode():
        _assert_nothing_read(calls, views_sampled=True)
    with torch.no_grad():
        _assert_nothing_read(calls)


def _inference_layer():
    with torch.inference_mode():
        q, scales, _ = random_layer(64, 256, 64, False)
        repacked = OPS.woq_repack_weight(q)
        x = torch.randn(3, 256)
    return q, scales, repacked, x


def _one_nibble_edit(repacked, q):
    """Flips one nibble of word (5, 3) in place (k = 24 of row 5); returns
    the int8 weights it now holds."""
    with torch.inference_mode():
        repacked[5, 3] ^= 1
    q3 = q.clone()
    q3[5, 24] = ((q3[5, 24] ^ 1) + 8 & 0xF) - 8
    assert torch.equal(OPS.woq_repack_weight(q3), repacked)
    return q3


@pytest.mark.parametrize("check", ["identity", "sampled", "content"])
def test_edit_visibility(check):
    """The table of docs/torch.md, row by row: a whole-tensor update is seen
    by sampled and content, a one-nibble edit by content alone, and every
    edit after flush_weight_cache() whatever the check."""
    OPS.weight_check(check)
    q1, scales, repacked, x = _inference_layer()
    q2, _, _ = random_layer(64, 256, 64, False)

    def run():
        with torch.inference_mode():
            return OPS.woq_linear(x, repacked.t(), scales, None)

    def agrees(y, q):
        want, mag = w4a16_reference(x, q, scales, None, None)
        return bool(torch.all((y.double() - want).abs() <= 1e-4 * mag + 1e-5))

    assert agrees(run(), q1)
    with torch.inference_mode():
        repacked.copy_(OPS.woq_repack_weight(q2))  # a whole-tensor update
    assert agrees(run(), q2 if check != "identity" else q1)
    OPS.flush_weight_cache()
    assert agrees(run(), q2)
    q3 = _one_nibble_edit(repacked, q2)
    y = run()
    if check == "content":
        assert agrees(y, q3)
    elif check == "identity":
        assert agrees(y, q2)  # stale until flushed, as documented
    OPS.flush_weight_cache()
    assert_close(run(), *w4a16_reference(x, q3, scales, None, None),
                 torch.float32)


def test_sampled_check_sees_updated_scales():
    """A new checkpoint's scales differ in (nearly) every line: the tripwire
    sees them even when the weight's nibbles are unchanged."""
    q, scales, repacked, x = _inference_layer()
    with torch.inference_mode():
        y1 = OPS.woq_linear(x, repacked.t(), scales, None)
        scales.mul_(1.5)
        y2 = OPS.woq_linear(x, repacked.t(), scales, None)
    assert_close(y1 * 1.5, *w4a16_reference(x, q, scales, None, None),
                 torch.float32)
    assert_close(y2, *w4a16_reference(x, q, scales, None, None),
                 torch.float32)


def test_address_reuse_is_a_miss_under_every_check():
    """A weight freed and another made (the allocator may hand back the same
    address): never the old layer, whatever the check (the weak storage
    reference, not the bytes, decides)."""
    for check in ("identity", "sampled", "content"):
        OPS.weight_check(check)
        for _ in range(3):
            q, scales, repacked, x = _inference_layer()
            with torch.inference_mode():
                y = OPS.woq_linear(x, repacked.t(), scales, None)
            assert_close(y, *w4a16_reference(x, q, scales, None, None),
                         torch.float32)
            del repacked, scales


def test_bad_setting_names_the_value():
    with pytest.raises(RuntimeError, match="'sometimes'"):
        OPS.weight_check("sometimes")
    assert OPS.weight_check() == "sampled"


def test_moe_flush_and_content_check():
    """fused_moe under inference tensors: an expert's nibble edited in place
    is seen after flush_moe_weight_cache (zentorch's name) or with the
    content check."""
    e, h, i, gs = 4, 64, 32, 32
    with torch.inference_mode():
        _, _, p13, p2, s13, s2 = stacked_experts(e, h, i, gs)
        x = torch.randn(2, h)
        ids = torch.tensor([[0, 1], [1, 2]], dtype=torch.int32)
        weights = torch.rand(2, 2)

    def run():
        with torch.inference_mode():
            out = torch.empty(2, h)
            OPS.fused_moe(out, x, p13, p2, None, None, weights, ids, False,
                          "silu", s13, s2, mode="w4a16")
            return out

    def fresh():
        return run_with(p13.clone(), p2.clone())

    def run_with(a, b):
        with torch.inference_mode():
            out = torch.empty(2, h)
            OPS.fused_moe(out, x, a, b, None, None, weights, ids, False,
                          "silu", s13, s2, mode="w4a16")
            return out

    y0 = run()
    with torch.inference_mode():
        p13[1, 3, 2] ^= 0x11  # two nibbles of expert 1's w13, row 3
    want = fresh()
    assert not torch.equal(want, y0)
    OPS.flush_moe_weight_cache()
    assert torch.equal(run(), want)
    OPS.weight_check("content")
    with torch.inference_mode():
        p13[1, 3, 2] ^= 0x11
    assert torch.equal(run(), y0)
