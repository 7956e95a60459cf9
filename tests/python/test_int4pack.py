"""torchao int4 weight-only ("tinygemm") checkpoints: weights in torch's CPU
int4pack layout with bf16 scales and bf16/f32 float zero points [G, N],
through woq_repack_from_int4pack + woq_linear, against a float64 reference
of w = (u - 8) * s + z, on every ISA tier this machine runs (each tier in a
subprocess with W4JIT_ISA set, the cap being read once per process); and
the layout itself, which torch picks by its CPU capability: a model of it
written from its description against torch's own packer, in this process
and under each ATEN_CPU_CAPABILITY, with woq_repack_from_int4pack reading
torch's bytes."""
import os
import subprocess
import sys

import pytest
import torch

import w4jit  # noqa: F401
from reference import assert_close, int4_kernel_terms


def _capability():
    """The CPU capability torch packs int4pack weights for in this process,
    as woq_repack_from_int4pack reads it ("AVX512", "AVX2", "DEFAULT")."""
    return torch.ops.w4jit._int4pack_capability().upper()


def int4pack_for_cpu(w, capability=None):
    """torch._convert_weight_to_int4pack_for_cpu(w int32 [N, K], 1) as torch
    writes it at `capability` (default: this process's), written from the
    layout's description (aten/src/ATen/native/cpu/int4mm_kernel.cpp,
    weight_to_int4pack_kernel; runtime/formats/tinygemm_int4pack.cc): rows
    in blocks of 64 (AVX512) or 32 (AVX2, DEFAULT), block b at byte
    b * B * K / 2, k-major inside it; a full block of a vector capability
    holds per k bytes j = row j | row j + B/2 << 4, any other block (every
    DEFAULT block, a last block of fewer rows) adjacent pairs, byte j =
    row 2j | row 2j + 1 << 4. N % 16 == 0, K even. Debian's torch 1.13 has
    no such op, so this stands in for it; where torch has it, the two are
    compared."""
    capability = (capability or _capability()).upper()
    n, k = w.shape
    assert n % 16 == 0 and k % 2 == 0
    rows = 64 if capability == "AVX512" else 32
    vector = capability in ("AVX512", "AVX2")
    u = w.to(torch.uint8)
    out = []
    for start in range(0, n, rows):
        b = u[start:start + rows]  # [nb, K]
        nb = b.shape[0]
        if vector and nb == rows:
            lo, hi = b[:rows // 2], b[rows // 2:]
        else:
            lo, hi = b[0::2], b[1::2]
        out.append((lo | (hi << 4)).t().reshape(-1))  # k-major, nb/2 per k
    return torch.cat(out).reshape(n, k // 2).contiguous()


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
    mag = (xd.abs() @ wq.abs().t() + xd.abs() @ z.abs().t() +
           int4_kernel_terms(x, u, 8.0, s))
    if bias is not None:
        y = y + bias.double()
        mag = mag + bias.double().abs()
    return y, mag


# N with and without tails: 64- and 32-row blocks and 16/32/48-row ends.
LAYOUT_NS = (16, 32, 48, 64, 80, 96, 112, 128, 144, 208)


def test_python_layout_spot_checks():
    w = torch.randint(0, 16, (208, 6), dtype=torch.int32)
    for cap, rows in (("AVX512", 64), ("AVX2", 32), ("DEFAULT", 32)):
        flat = int4pack_for_cpu(w, cap).reshape(-1)
        assert flat.numel() == 208 * 3
        if cap == "AVX512":
            # byte d: rows d and d + 32; byte 16 + d: rows d + 16 and d + 48
            assert flat[3] == w[3, 0] | (w[35, 0] << 4)
            assert flat[16 + 3] == w[19, 0] | (w[51, 0] << 4)
            assert flat[32 + 5] == w[5, 1] | (w[37, 1] << 4)
        elif cap == "AVX2":
            # byte j: rows j and j + 16
            assert flat[3] == w[3, 0] | (w[19, 0] << 4)
            assert flat[16 + 5] == w[5, 1] | (w[21, 1] << 4)
        else:
            assert flat[3] == w[6, 0] | (w[7, 0] << 4)
        # The last block, 208 % rows = 16 rows of adjacent pairs, at byte
        # (208 - 16) * 6 / 2; per k 8 bytes.
        base = (208 - 16) * 3
        assert flat[base + 8 + 2] == w[196, 1] | (w[197, 1] << 4)


def _layout_and_repack_checks():
    """Returns the capability; asserts (where torch has the packer) that
    torch's bytes are this file's model's, and that woq_repack_from_int4pack
    reads them as woq_repack_weight reads the values, for every N."""
    cap = _capability()
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability",
                  None)
    if get is not None:
        assert get().upper() == cap, (get(), cap)
    gen = torch.Generator().manual_seed(3)
    for n in LAYOUT_NS:
        for k in (2, 64):
            w = torch.randint(0, 16, (n, k), dtype=torch.int32, generator=gen)
            theirs = _torch_int4pack(w)
            mine = int4pack_for_cpu(w, cap)
            if theirs is not None:
                theirs = theirs.view(torch.uint8).reshape(mine.shape)
                assert torch.equal(theirs, mine), (cap, n, k)
            if k % 8 == 0:
                packed = theirs if theirs is not None else mine
                got = torch.ops.w4jit.woq_repack_from_int4pack(packed)
                want = torch.ops.w4jit.woq_repack_weight(w.to(torch.int8))
                assert torch.equal(got, want), (cap, n, k)
    return cap


def test_layout_matches_torch_here():
    cap = _layout_and_repack_checks()
    assert cap in ("AVX512", "AVX2", "DEFAULT")
    if _torch_int4pack(torch.zeros(16, 2, dtype=torch.int32)) is None:
        pytest.skip(f"torch {torch.__version__} has no "
                    "_convert_weight_to_int4pack_for_cpu: the layout model "
                    "and the op were checked without it")


def _in_subprocess(code, capability):
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability)
    here = os.path.dirname(os.path.abspath(__file__))
    env["PYTHONPATH"] = os.pathsep.join(
        [here] + [os.path.abspath(p)
                  for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=here,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("capability", ("default", "avx2", "avx512"))
def test_layout_matches_torch_at_each_capability(capability):
    # torch honours ATEN_CPU_CAPABILITY (its packer and its kernels), and
    # woq_repack_from_int4pack reads torch's capability, so the three
    # layouts can be checked on one machine, each in its own process.
    r = _in_subprocess("import test_int4pack as t; "
                       "print('capability', t._layout_and_repack_checks())",
                       capability)
    if r.returncode < 0:
        pytest.skip(f"ATEN_CPU_CAPABILITY={capability}: torch died of signal "
                    f"{-r.returncode} (its {capability} kernels cannot run on "
                    "this CPU)")
    assert r.returncode == 0, r.stdout + r.stderr
    got = r.stdout.split("capability", 1)[1].strip()
    if got != capability.upper():
        pytest.skip(f"torch {torch.__version__} runs at {got} with "
                    f"ATEN_CPU_CAPABILITY={capability} (not built for it)")


def test_unknown_capability_override():
    r = _in_subprocess(
        "import torch, w4jit\n"
        "try:\n"
        "    torch.ops.w4jit.woq_repack_from_int4pack("
        "torch.zeros(32, 4, dtype=torch.uint8))\n"
        "    print('read as', torch.ops.w4jit._int4pack_capability())\n"
        "except RuntimeError as e:\n"
        "    print('error', e)\n", "bogus")
    assert r.returncode == 0, r.stdout + r.stderr
    if hasattr(torch.backends, "cpu") and hasattr(torch.backends.cpu,
                                                  "get_cpu_capability"):
        # torch ignores it (with a warning) and picks its capability itself;
        # w4jit reads what torch picked.
        assert "read as" in r.stdout, r.stdout
        assert "bogus" in r.stderr, r.stderr
    else:
        # A torch that cannot be asked: w4jit applies torch's rule and
        # names the value it cannot read.
        assert "error" in r.stdout and "'bogus'" in r.stdout, r.stdout


def test_repack_from_int4pack_equals_repack_of_unpacked():
    u = torch.randint(0, 16, (192, 96), dtype=torch.int32)
    got = torch.ops.w4jit.woq_repack_from_int4pack(int4pack_for_cpu(u))
    want = torch.ops.w4jit.woq_repack_weight(u.to(torch.int8))
    assert got.dtype == torch.int32 and torch.equal(got, want)


def test_repack_from_int4pack_errors():
    with pytest.raises(RuntimeError, match="N = 40"):
        torch.ops.w4jit.woq_repack_from_int4pack(
            torch.zeros(40, 16, dtype=torch.uint8))
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
    assert_close(y, x.double() @ w.t(),
                 x.double().abs() @ w.abs().t() +
                 int4_kernel_terms(x, u, zz, s), torch.bfloat16)


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
