"""Tensor parallelism over torch.distributed with w4jit.Linear layers.

A GPTQ act-order checkpoint (qweight int32 [K/8, N], qzeros int32 [G, N/8],
scales [G, N], g_idx int32 [K]) is sharded the way vLLM shards GPTQ:

- column-parallel (N split): rank r keeps output columns
  [r N/R, (r+1) N/R) of qweight, qzeros, scales and bias, and the whole
  g_idx; the outputs are all-gathered along N;
- row-parallel (K split): rank r keeps rows [r K/R, (r+1) K/R) of qweight
  and of g_idx, whose values still name the checkpoint's groups (with
  act-order each rank holds a different, uneven number of channels of each
  group), and the whole qzeros and scales; the partial outputs are
  all-reduced and the bias added once.

Each rank builds a w4jit.Linear on its shard (from_gptq with the
checkpoint's group_size). docs/tensor-parallel.md says which K splits are
legal for each checkpoint format.

Run:  python3 examples/tensor_parallel/tp_linear.py [--ranks 2]
(gloo over 127.0.0.1; prints each layout's largest difference from the
unsharded layer). tests/python/test_tensor_parallel.py runs the same code.
"""
import argparse
import socket
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def random_act_order_gptq(n, k, group_size, seed):
    """An act-order GPTQ v1 checkpoint with asymmetric (u4) weights:
    (qweight, qzeros, scales f16 [G, N], g_idx int32 [K], bias f32 [N]) and
    the integers behind it (q u4 int8 [N, K], zeros int8 [G, N])."""
    from w4jit import formats
    gen = torch.Generator().manual_seed(seed)
    groups = k // group_size
    q = torch.randint(0, 16, (n, k), dtype=torch.int8, generator=gen)
    zeros = torch.randint(0, 16, (groups, n), dtype=torch.int8, generator=gen)
    scales = (torch.rand(groups, n, generator=gen) * 0.02 + 0.001).half()
    # desc_act: channel k belongs to group g_idx[k], in no particular order.
    g_idx = (torch.randperm(k, generator=gen) // group_size).to(torch.int32)
    bias = torch.randn(n, generator=gen) * 0.1
    qweight, qzeros, s = formats.pack_gptq(q, scales, zeros, version=1)
    return dict(qweight=qweight, qzeros=qzeros, scales=s, g_idx=g_idx,
                bias=bias, q=q, zeros=zeros)


def column_shard(ckpt, rank, ranks):
    """Output channels [r N/R, (r+1) N/R): qweight, scales and bias split
    along N, qzeros along N/8 (N/R must be a multiple of 8), g_idx whole."""
    n = ckpt["qweight"].shape[1]
    lo, hi = rank * n // ranks, (rank + 1) * n // ranks
    return dict(qweight=ckpt["qweight"][:, lo:hi].contiguous(),
                qzeros=ckpt["qzeros"][:, lo // 8:hi // 8].contiguous(),
                scales=ckpt["scales"][:, lo:hi].contiguous(),
                g_idx=ckpt["g_idx"], bias=ckpt["bias"][lo:hi].contiguous())


def row_shard(ckpt, rank, ranks):
    """Input channels [r K/R, (r+1) K/R): qweight rows (K/8 words) and g_idx
    split, scales and qzeros whole, no bias (added once after the
    all-reduce). K/R must be a multiple of 8 (8 channels per int32)."""
    k = ckpt["g_idx"].shape[0]
    lo, hi = rank * k // ranks, (rank + 1) * k // ranks
    return dict(qweight=ckpt["qweight"][lo // 8:hi // 8].contiguous(),
                qzeros=ckpt["qzeros"], scales=ckpt["scales"],
                g_idx=ckpt["g_idx"][lo:hi].contiguous(), bias=None)


def build(shard, group_size, dtype, mode="w4a16"):
    import w4jit
    return w4jit.Linear.from_gptq(shard["qweight"], shard["qzeros"],
                                  shard["scales"], shard["g_idx"],
                                  shard["bias"], version=1,
                                  group_size=group_size, dtype=dtype,
                                  mode=mode)


def column_parallel(x, ckpt, group_size, dtype, mode="w4a16"):
    """This rank's column shard applied to the whole x, all-gathered (as
    f32, exact for bf16 too: gloo of torch 1.13 gathers no bf16)."""
    rank, ranks = dist.get_rank(), dist.get_world_size()
    part = build(column_shard(ckpt, rank, ranks), group_size, dtype, mode)(x)
    parts = [torch.empty(part.shape) for _ in range(ranks)]
    dist.all_gather(parts, part.float().contiguous())
    return torch.cat(parts, dim=-1).to(dtype)


def row_parallel(x, ckpt, group_size, dtype, mode="w4a16"):
    """This rank's row shard applied to its K-slice of x, all-reduced (in
    f32: gloo of torch 1.13 reduces no bf16), then + bias, rounded once to
    dtype."""
    rank, ranks = dist.get_rank(), dist.get_world_size()
    k = x.shape[-1]
    xs = x[..., rank * k // ranks:(rank + 1) * k // ranks]
    part = build(row_shard(ckpt, rank, ranks), group_size, dtype, mode)(xs)
    total = part.to(torch.float32, copy=True)  # part stays this rank's
    dist.all_reduce(total)
    return (total + ckpt["bias"]).to(dtype), part


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_rank(rank, ranks, port, timeout_s=120):
    """gloo over loopback only; one intra-op thread per rank."""
    import datetime
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
        world_size=ranks, timeout=datetime.timedelta(seconds=timeout_s))


def _demo_rank(rank, ranks, port, n, k, group_size):
    import w4jit  # noqa: F401  (each spawned process loads the ops)
    init_rank(rank, ranks, port)
    try:
        ckpt = random_act_order_gptq(n, k, group_size, seed=1)
        torch.manual_seed(2)
        x = torch.randn(5, k).bfloat16()
        full = build(ckpt, group_size, torch.bfloat16)(x).float()
        col = column_parallel(x, ckpt, group_size, torch.bfloat16).float()
        row, _ = row_parallel(x, ckpt, group_size, torch.bfloat16)
        if rank == 0:
            scale = full.abs().max().item()
            print(f"{ranks} ranks, N = {n}, K = {k}, group {group_size}, "
                  f"act-order: max |column-parallel - unsharded| = "
                  f"{(col - full).abs().max().item():.3g}, max |row-parallel"
                  f" - unsharded| = {(row.float() - full).abs().max().item():.3g}"
                  f" (max |y| = {scale:.3g})")
    finally:
        dist.destroy_process_group()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--k", type=int, default=1024)
    p.add_argument("--group-size", type=int, default=128)
    a = p.parse_args(argv)
    mp.spawn(_demo_rank, args=(a.ranks, free_port(), a.n, a.k, a.group_size),
             nprocs=a.ranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
