"""Tensor parallelism on torch.distributed (gloo, 127.0.0.1 only): 2 ranks,
spawned here, each holding a w4jit.Linear on its shard of one GPTQ
act-order checkpoint, sharded as vLLM shards GPTQ
(examples/tensor_parallel/tp_linear.py): column-parallel (N split,
all-gather) and row-parallel (K split with g_idx split, its values naming
the checkpoint's groups unevenly, scales and zero points whole;
all-reduce). The gathered / reduced outputs match the unsharded layer and
the float64 reference within numerics.md's tolerances."""
import os
import sys
import time

import pytest
import torch
import torch.multiprocessing as mp

from reference import (assert_close, bf16_ulp, int4_kernel_terms,
                       quantize_rows)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "examples", "tensor_parallel"))
import tp_linear as tp  # noqa: E402

RANKS = 2
N, K, GS = 64, 1024, 128
TIMEOUT_S = 300
# (dtype, mode); x of shape [4, K] and [2, 3, K].
CASES = [(torch.bfloat16, "w4a16"), (torch.float32, "w4a16"),
         (torch.bfloat16, "da8w4")]
SHAPES = [(4,), (2, 3)]


def _rank(rank, ranks, port, out_dir):
    import w4jit  # noqa: F401  (each spawned process loads the ops)
    tp.init_rank(rank, ranks, port)
    try:
        results = []
        for i, (dtype, mode) in enumerate(CASES):
            ckpt = tp.random_act_order_gptq(N, K, GS, seed=10 + i)
            for j, lead in enumerate(SHAPES):
                gen = torch.Generator().manual_seed(100 * i + j)
                x = torch.randn(*lead, K, generator=gen).to(dtype)
                whole = tp.build(ckpt, GS, dtype, mode)(x)
                col = tp.column_parallel(x, ckpt, GS, dtype, mode)
                row, part = tp.row_parallel(x, ckpt, GS, dtype, mode)
                results.append(dict(x=x, whole=whole, col=col, row=row,
                                    part=part))
        torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        import torch.distributed as dist
        dist.destroy_process_group()


def _dense(ckpt, lo=0, hi=K):
    """f64 [N, hi - lo] weights of channels [lo, hi) and their groups."""
    g = ckpt["g_idx"][lo:hi].long()
    w = ckpt["q"][:, lo:hi].double() - ckpt["zeros"].double()[g].t()
    return w, ckpt["scales"].double()[g].t(), g


def _reference(mode, x, ckpt, lo, hi, bias):
    """(y f64, T f64) of channels [lo, hi) of the layer on x[..., lo:hi]."""
    w, s, g = _dense(ckpt, lo, hi)
    xs = x[..., lo:hi]
    if mode == "w4a16":
        wd = w * s
        y, mag = xs.double() @ wd.t(), xs.double().abs() @ wd.abs().t()
        z = ckpt["zeros"].double()[g].t()
        mag = mag + int4_kernel_terms(xs, ckpt["q"][:, lo:hi], z, s)
    else:  # DA8W4's integer definition, groups {k : g_idx[k] = g}
        qa, sa = quantize_rows(xs)
        onehot = torch.nn.functional.one_hot(g, K // GS).double()
        acc = torch.einsum("...k,nk,kg->...ng", qa, w, onehot)
        sg = ckpt["scales"].double().t()  # [N, G]
        y, mag = sa * (acc * sg).sum(-1), sa * (acc * sg).abs().sum(-1)
    if bias is not None:
        y, mag = y + bias.double(), mag + bias.double().abs()
    return y, mag


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    out_dir = str(tmp_path_factory.mktemp("tp"))
    ctx = mp.spawn(_rank, args=(RANKS, tp.free_port(), out_dir),
                   nprocs=RANKS, join=False)
    deadline = time.monotonic() + TIMEOUT_S
    while not ctx.join(timeout=5):
        if time.monotonic() > deadline:
            for p in ctx.processes:
                if p.is_alive():
                    p.kill()
            pytest.fail(f"the {RANKS} ranks did not finish in {TIMEOUT_S} s")
    return [torch.load(os.path.join(out_dir, f"rank{r}.pt"))
            for r in range(RANKS)]


def _cases():
    for i, (dtype, mode) in enumerate(CASES):
        for j, lead in enumerate(SHAPES):
            yield i * len(SHAPES) + j, i, dtype, mode, lead


IDS = [f"{mode}-{str(dtype)[6:]}-{'x'.join(map(str, lead))}"
       for _, _, dtype, mode, lead in _cases()]


@pytest.mark.parametrize("case", list(_cases()), ids=IDS)
def test_column_parallel_matches_unsharded(rank_results, case):
    idx, i, dtype, mode, lead = case
    ckpt = tp.random_act_order_gptq(N, K, GS, seed=10 + i)
    r0 = rank_results[0][idx]
    want, mag = _reference(mode, r0["x"], ckpt, 0, K, ckpt["bias"])
    for r in range(RANKS):
        got = rank_results[r][idx]["col"]
        assert got.shape == (*lead, N)
        # Each output column is computed whole on one rank.
        assert_close(got, want, mag, dtype)
        assert torch.equal(got, r0["col"])
    assert_close(r0["whole"], want, mag, dtype)


@pytest.mark.parametrize("case", list(_cases()), ids=IDS)
def test_row_parallel_act_order_matches_unsharded(rank_results, case):
    idx, i, dtype, mode, lead = case
    ckpt = tp.random_act_order_gptq(N, K, GS, seed=10 + i)
    x = rank_results[0][idx]["x"]
    ks = K // RANKS
    # The shards really are uneven: some group has different member counts
    # on the two ranks (else this would not test the regrouping).
    counts = [torch.bincount(ckpt["g_idx"][r * ks:(r + 1) * ks].long(),
                             minlength=K // GS) for r in range(RANKS)]
    assert any(c.ne(GS // RANKS).any() for c in counts)
    tol_parts = 0.0
    for r in range(RANKS):
        part = rank_results[r][idx]["part"]
        want_r, mag_r = _reference(mode, x, ckpt, r * ks, (r + 1) * ks, None)
        assert_close(part, want_r, mag_r, dtype)
        tol_parts = tol_parts + 1e-5 * mag_r + 1e-6
        if dtype == torch.bfloat16:
            tol_parts = tol_parts + bf16_ulp(want_r)
    row = rank_results[0][idx]["row"]
    for r in range(RANKS):
        assert torch.equal(rank_results[r][idx]["row"], row)
    if mode != "w4a16":
        return  # DA8W4 quantizes each rank's slice of x: checked per shard
    want, mag = _reference(mode, x, ckpt, 0, K, ckpt["bias"])
    # The ranks' own tolerances, then the sum rounded once to dtype.
    tol = tol_parts + (bf16_ulp(want) if dtype == torch.bfloat16 else 0)
    err = (row.double() - want).abs()
    assert torch.all(err <= tol), (err - tol).max().item()
    # And the unsharded layer, within both of their tolerances.
    whole = rank_results[0][idx]["whole"]
    assert_close(whole, want, mag, dtype)
    whole_tol = 1e-5 * mag + 1e-6 + (bf16_ulp(want) if dtype == torch.bfloat16
                                     else 0)
    assert torch.all((row.double() - whole.double()).abs() <= tol + whole_tol)


def test_row_shard_refuses_a_group_past_the_scales():
    import w4jit  # noqa: F401
    ckpt = tp.random_act_order_gptq(N, K, GS, seed=3)
    shard = tp.row_shard(ckpt, 1, RANKS)
    shard["g_idx"] = shard["g_idx"].clone()
    shard["g_idx"][5] = K // GS
    with pytest.raises(RuntimeError,
                       match=rf"g_idx\[5\] = {K // GS} is not a group of the "
                             rf"scales, which hold {K // GS} groups"):
        tp.build(shard, GS, torch.float32)
