"""torchao int4 weight-only ("tinygemm") checkpoints: weights in torch's CPU
int4pack layout with bf16 scales and bf16/f32 float zero points [G, N],
through woq_repack_from_int4pack + woq_linear, against a float64 reference
of w = (u - 8) * s + z, on every ISA tier this machine runs (each tier in a
subprocess with W4JIT_ISA set, the cap being read once per process)."""
import os
import subprocess
import sys

import pytest
import torch

import w4jit  # noqa: F401
from reference import assert_close


def int4pack_for_cpu(w):
    """torch._convert_weight_to_int4pack_for_cpu(w int32 [N, K], 1) as an
    AVX-512 build of torch writes it (aten/src/ATen/native/cpu/
    int4mm_kernel.cpp, weight_to_int4pack_kernel, 64-row blocks): per block
    and column k 32 bytes, byte d holding rows d (low nibble) and d + 32
    (high), byte 16 + d rows d + 16 and d + 48. Debian's torch 1.13 has no
    such op, so this implementation stands in for it; where torch has the
    op and runs its AVX-512 kernels, the two are compared."""
    n, k = w.shape
    assert n % 64 == 0
    b = w.to(torch.uint8).reshape(n // 64, 4, 16, k)  # [blocks, quarter, d, k]
    lo = torch.cat([b[:, 0], b[:, 1]], dim=1)  # rows d and d + 16
    hi = torch.cat([b[:, 2], b[:, 3]], dim=1)  # rows d + 32 and d + 48
    packed = (lo | (hi << 4)).permute(0, 2, 1)  # [blocks, k, 32]
    return packed.reshape(n, k // 2).contiguous()


def _torch_int4pack(w):
    op = getattr(torch.ops.aten, "_convert_weight_to_int4pack_for_cpu", None)
    if op is None:
        return None
    return op(w.to(torch.int32), 1)


def random_tinygemm(n, k, group_size, zp_dtype):
    """-> u int32 [N, K] in [0, 15], scales bf16 [G, N], zeros [G, N]."""
    g = 1 if group_size == -1 else k // group_size
    u = torch.randint(0, 16, (n, k), dtype=torch.int32)
    scales = (torch.rand(g, n) * 0.02 + 0.001).to(torch.bfloat16)
    zeros = ((torch.rand(g, n) - 0.5) * 0.2).to(zp_dtype)
    return u, scales, zeros


def tinygemm_reference(x, u, scales, zeros, bias):
    """(y f64, T f64): w = (u - 8) * s + z; T = sum |(u - 8) s x| + sum
    |z x| + |bias| (numerics.md's magnitude for float zero points)."""
    k = u.shape[1]
    g = scales.shape[0]
    s = scales.double().t().repeat_interleave(k // g, dim=1)
    z = zeros.double().t().repeat_interleave(k // g, dim=1)
    wq = (u.double() - 8) * s
    xd = x.double()
    y = xd @ (wq + z).t()
    mag = xd.abs() @ wq.abs().t() + xd.abs() @ z.abs().t()
    if bias is not None:
        y = y + bias.double()
        mag = mag + bias.double().abs()
    return y, mag


def test_python_layout_matches_torch_where_available():
    w = torch.randint(0, 16, (128, 64), dtype=torch.int32)
    mine = int4pack_for_cpu(w)
    assert mine.shape == (128, 32) and mine.dtype == torch.uint8
    # Spot checks of the layout itself: byte k * 32 + j of a block.
    flat = mine.reshape(-1)
    assert flat[0].item() == (w[0, 0] | (w[32, 0] << 4)).item()
    assert flat[16].item() == (w[16, 0] | (w[48, 0] << 4)).item()
    assert flat[32 + 5].item() == (w[5, 1] | (w[37, 1] << 4)).item()
    assert flat[64 * 32 + 20].item() == (w[84, 0] | (w[116, 0] << 4)).item()
    theirs = _torch_int4pack(w)
    if theirs is None:
        pytest.skip(f"torch {torch.__version__} has no "
                    "_convert_weight_to_int4pack_for_cpu")
    if _torch_cpu_capability() not in ("AVX512", None):
        # A known gap, kept visible: torch packs 64-row blocks only where its
        # kernels are AVX-512 ones; on an AVX2 CPU it writes 32-row blocks
        # (byte j holds rows j and j + 16), which w4jit's tinygemm importer
        # and woq_repack_from_int4pack do not read yet (docs/torch-2x.md,
        # "Open problems"). The assertion fails once this test's layout
        # model follows torch's there, so the xfail cannot outlive the gap.
        assert not torch.equal(theirs.view(torch.uint8).reshape(mine.shape),
                               mine)
        pytest.xfail("torch's int4pack on a " + _torch_cpu_capability() +
                     " CPU is the 32-row layout w4jit does not read yet")
    assert torch.equal(theirs.view(torch.uint8).reshape(mine.shape), mine)


def _torch_cpu_capability():
    """torch's CPU kernel capability ("AVX512", "AVX2", "DEFAULT"), or None
    where torch cannot say (1.13)."""
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability",
                  None)
    return get() if get is not None else None


def test_repack_from_int4pack_equals_repack_of_unpacked():
    u = torch.randint(0, 16, (192, 96), dtype=torch.int32)
    got = torch.ops.w4jit.woq_repack_from_int4pack(int4pack_for_cpu(u))
    want = torch.ops.w4jit.woq_repack_weight(u.to(torch.int8))
    assert got.dtype == torch.int32 and torch.equal(got, want)


def test_repack_from_int4pack_errors():
    with pytest.raises(RuntimeError, match="N = 96"):
        torch.ops.w4jit.woq_repack_from_int4pack(
            torch.zeros(96, 16, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="packed_weight"):
        torch.ops.w4jit.woq_repack_from_int4pack(
            torch.zeros(64, 16, dtype=torch.int32))


def test_float_zero_points_of_wrong_dtype_are_refused():
    u, scales, _ = random_tinygemm(64, 64, 32, torch.bfloat16)
    packed = torch.ops.w4jit.woq_repack_from_int4pack(int4pack_for_cpu(u))
    x = torch.randn(2, 64).to(torch.bfloat16)
    with pytest.raises(RuntimeError, match="zero_points"):
        torch.ops.w4jit.woq_linear(x, packed.t(), scales,
                                   torch.zeros(2, 64, dtype=torch.float16),
                                   None)


def run_tier_checks():
    """What each tier's subprocess runs: groups 32, 128 and K, bf16 and
    f32 zero points, bf16 and f32 x, M on both kernel paths, bias or not;
    the integer meaning of int8 zero points unchanged beside them; all of
    it again under torch.inference_mode."""
    torch.set_num_threads(2)
    # Plain tensors, then everything made and called under inference_mode
    # (as zentorch's tests and vLLM do).
    torch.manual_seed(7)
    _tier_checks()
    with torch.inference_mode():
        torch.manual_seed(8)
        _tier_checks()
    print("tier checks passed")


def _tier_checks():
    n, k = 192, 256
    for group_size in (32, 128, -1):
        for zp_dtype in (torch.bfloat16, torch.float32):
            u, scales, zeros = random_tinygemm(n, k, group_size, zp_dtype)
            packed = torch.ops.w4jit.woq_repack_from_int4pack(
                int4pack_for_cpu(u))
            for dtype in (torch.bfloat16, torch.float32):
                bias = torch.randn(n).to(dtype) if group_size == 32 else None
                for m in (1, 3, 17, 64):
                    x = torch.randn(m, k).to(dtype)
                    y = torch.ops.w4jit.woq_linear(x, packed.t(), scales,
                                                   zeros, bias)
                    want, mag = tinygemm_reference(x, u, scales, zeros, bias)
                    assert_close(y, want, mag, dtype)
    # int8 zero points keep (u - z) * s.
    u, scales, _ = random_tinygemm(n, k, 64, torch.bfloat16)
    zi = torch.randint(0, 16, scales.shape, dtype=torch.int8)
    packed = torch.ops.w4jit.woq_repack_from_int4pack(int4pack_for_cpu(u))
    x = torch.randn(5, k).to(torch.bfloat16)
    y = torch.ops.w4jit.woq_linear(x, packed.t(), scales, zi, None)
    s = scales.double().t().repeat_interleave(64, dim=1)
    zz = zi.double().t().repeat_interleave(64, dim=1)
    w = (u.double() - zz) * s
    assert_close(y, x.double() @ w.t(), x.double().abs() @ w.abs().t(),
                 torch.bfloat16)


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


TIERS = {
    "avx2": {"avx2", "fma"},
    "avx512_vnni": {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"},
    "avx512_bf16": {"avx512f", "avx512bw", "avx512vl", "avx512_vnni",
                    "avx512_bf16"},
}


@pytest.mark.parametrize("tier", list(TIERS))
def test_tinygemm_woq_linear_every_tier(tier):
    if os.environ.get("W4JIT_ISA") and os.environ["W4JIT_ISA"] != tier:
        pytest.skip(f"W4JIT_ISA={os.environ['W4JIT_ISA']} caps the run")
    missing = TIERS[tier] - _cpu_flags()
    if missing:
        pytest.skip(f"this CPU lacks {sorted(missing)}")
    env = dict(os.environ, W4JIT_ISA=tier)
    here = os.path.dirname(os.path.abspath(__file__))
    # Absolute paths: the worker runs from this directory.
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + [os.path.abspath(p)
                  for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    r = subprocess.run(
        [sys.executable, "-c",
         "import test_int4pack as t; t.run_tier_checks()"],
        env=env, cwd=here, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "tier checks passed" in r.stdout
    assert "is above what this CPU supports" not in r.stderr
