"""Pack and unpack 4-bit weights in the checkpoint layouts w4jit reads
(docs/formats.md), in plain torch. For tests, benchmarks and for
building layers from unpacked integers; w4jit itself imports the packed
tensors directly.

Conventions: q is int8 [N, K] holding s4 values in [-8, 7] or u4 values in
[0, 15]; zero points z are int8 [G, N] in [0, 15]; scales are [G, N].
"""
import torch

_SHIFTS = torch.arange(0, 32, 4, dtype=torch.int64)
# AWQ's interleave: nibble i of a word holds column 8j + AWQ_ORDER[i].
AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def _pack_last(nibbles):
    """int [..., 8m] values 0..15 -> int32 [..., m], element j at nibble j % 8."""
    v = nibbles.to(torch.int64).reshape(*nibbles.shape[:-1], -1, 8) & 0xF
    words = (v << _SHIFTS).sum(-1)
    return (words - ((words >> 31) << 32)).to(torch.int32)  # wrap to int32


def _unpack_last(words):
    """int32 [..., m] -> int64 [..., 8m] nibbles 0..15."""
    w = words.to(torch.int64) & 0xFFFFFFFF
    return ((w.unsqueeze(-1) >> _SHIFTS) & 0xF).reshape(*words.shape[:-1], -1)


def pack_compressed_tensors(q, scales_gn, zeros_gn=None):
    """-> (weight_packed int32 [N, K/8], weight_scale [N, G],
    weight_zero_point int32 [N/8, G] or None). Stores q + 8 for s4 input
    (zeros None) and u4 as is; zero points are stored zp + 8 with zp = z - 8.
    """
    stored = q.to(torch.int64) + (8 if zeros_gn is None else 0)
    packed = _pack_last(stored)
    zp = None
    if zeros_gn is not None:
        # Packed along N: pack each group's row of N, then [G, N/8] -> [N/8, G].
        zp = _pack_last(zeros_gn).t().contiguous()
    return packed, scales_gn.t().contiguous(), zp


def unpack_compressed_tensors(weight_packed, n, k):
    """int32 [N, K/8] -> int64 [N, K] stored nibbles (q + 8)."""
    return _unpack_last(weight_packed)[:, :k]


def pack_gptq(q, scales_gn, zeros_gn=None, version=1):
    """-> (qweight int32 [K/8, N], qzeros int32 [G, N/8] or None, scales
    [G, N]). v1 stores zero - 1. s4 input (zeros None) is stored as q + 8."""
    stored = q.to(torch.int64) + (8 if zeros_gn is None else 0)
    n, k = stored.shape
    # [N, K] -> [K/8, N, 8]: the 8 k of word (k/8, n) last.
    qweight = _pack_last(
        stored.t().reshape(k // 8, 8, n).permute(0, 2, 1).reshape(k // 8, -1))
    qzeros = None
    if zeros_gn is not None:
        z = zeros_gn.to(torch.int64) - (1 if version == 1 else 0)
        qzeros = _pack_last(z & 0xF)
    return qweight, qzeros, scales_gn.contiguous()


def pack_awq(q, scales_gn, zeros_gn=None):
    """-> (qweight int32 [K, N/8], qzeros int32 [G, N/8] or None, scales
    [G, N]), columns interleaved by AWQ_ORDER."""
    stored = q.to(torch.int64) + (8 if zeros_gn is None else 0)

    def interleave(a):  # [..., N] -> [..., N] in nibble order
        n = a.shape[-1]
        idx = torch.tensor(AWQ_ORDER)
        return a.reshape(*a.shape[:-1], n // 8, 8)[..., idx].reshape(a.shape)

    qweight = _pack_last(interleave(stored.t().contiguous()))
    qzeros = None
    if zeros_gn is not None:
        qzeros = _pack_last(interleave(zeros_gn.to(torch.int64)))
    return qweight, qzeros, scales_gn.contiguous()


def repack_int32(q):
    """What woq_repack_weight computes, in torch: int8 [N, K] -> int32
    [N, K/8], value k at nibble k % 8 (two's complement for negatives)."""
    return _pack_last(q.to(torch.int64))


def unpack_int32(words):
    """The inverse of repack_int32: int32 [N, K/8] -> int8 [N, K] s4 values
    in [-8, 7]."""
    nibbles = _unpack_last(words)
    return (nibbles - ((nibbles >> 3) << 4)).to(torch.int8)
