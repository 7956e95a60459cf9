"""Threads: w4jit runs on ATen's intra-op pool (torch.set_num_threads
governs it, nested regions do not fan out), and concurrent calls from
Python threads are correct."""
import threading
from concurrent.futures import ThreadPoolExecutor

import torch

from reference import random_layer

N, K, GS = 256, 1024, 128


def test_set_num_threads_governs_w4jit():
    for n in (1, 2, 3):
        torch.set_num_threads(n)
        assert torch.ops.w4jit._concurrency() == n
    # Inside an ATen parallel region a call runs serially.
    torch.set_num_threads(2)
    assert torch.ops.w4jit._concurrency(True) == 1


def _layers():
    out = []
    for u4 in (False, True):
        q, scales, zeros = random_layer(N, K, GS, u4)
        out.append((torch.ops.w4jit.woq_repack_weight(q), scales, zeros))
    return out


def _call(layer, x, op):
    r, scales, zeros = layer
    if op == "woq":
        return torch.ops.w4jit.woq_linear(x, r.t(), scales, zeros, None)
    return torch.ops.w4jit.dynamic_qlinear(x, r.view(torch.int8),
                                           scales.bfloat16(), None)


def test_results_do_not_depend_on_thread_count():
    layers = _layers()
    x = torch.randn(7, K).bfloat16()
    torch.set_num_threads(1)
    one = [_call(layers[0], x, "woq"), _call(layers[0], x, "dq")]
    torch.set_num_threads(2)
    two = [_call(layers[0], x, "woq"), _call(layers[0], x, "dq")]
    for a, b in zip(one, two):
        assert torch.equal(a, b)


def test_concurrent_calls_from_python_threads():
    torch.ops.w4jit._clear_cache()
    layers = _layers()
    xs = [torch.randn(m, K).bfloat16() for m in (1, 5, 16)]
    jobs = [(li, xi, op) for li in range(2) for xi in range(3)
            for op in ("woq", "dq") if not (op == "dq" and li == 1)]
    # Serial answers first (on a separate cache state: the concurrent run
    # below starts from an empty cache so the first calls race to build).
    want = {j: _call(layers[j[0]], xs[j[1]], j[2]) for j in jobs}
    torch.ops.w4jit._clear_cache()
    start = threading.Barrier(4)

    def worker(seed):
        start.wait()
        bad = []
        for i in range(40):
            j = jobs[(seed + i) % len(jobs)]
            got = _call(layers[j[0]], xs[j[1]], j[2])
            if not torch.equal(got, want[j]):
                bad.append(j)
        return bad

    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(worker, range(4)))
    assert all(not r for r in results), results
