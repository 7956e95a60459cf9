"""Makes every Python process of a vLLM lane run (scripts/test-vllm.sh
--as-cpu=NAME) see a smaller CPU than the one it runs on, so that the
lane's branches for CPUs this machine is not can be run here.

A process picks this file up because scripts/test-vllm.sh puts its folder
first on PYTHONPATH; vLLM's workers inherit the variable, so tensor-parallel
workers see the same CPU. W4JIT_AS_CPU names the CPU:

  avx512-vnni  Ice Lake: AVX-512 with VNNI, no AVX512_BF16, no AMX.

What changes: the flags /proc/cpuinfo seems to list (the bench's
cpu_flags(), which the tests read), torch's AMX check (vLLM chooses its
AMX or vector kernels, and whether it has CPU int4 experts at all, from
torch.cpu._is_amx_tile_supported()), zentorch (hidden: its kernels need
AVX512_BF16) and w4jit's ISA (W4JIT_ISA). What does not: vLLM's and
oneDNN's compiled kernels still pick their instructions from CPUID, so this
checks which classes and paths the lane meets on such a CPU, not that
their instructions run there.
"""
import os

# Each CPU: the flags it lacks, and the w4jit tier it tops out at.
_CPUS = {
    "avx512-vnni": (("avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8",
                     "amx_bf16", "amx_fp16"), "avx512_vnni"),
}


def _emulate(name):
    if name not in _CPUS:
        raise SystemExit(f"W4JIT_AS_CPU={name!r}: not one of {sorted(_CPUS)}")
    hidden, isa = _CPUS[name]
    os.environ["W4JIT_BENCH_HIDE_FLAGS"] = ",".join(hidden)
    os.environ["W4JIT_BENCH_NO_ZENTORCH"] = "1"
    os.environ["W4JIT_ISA"] = isa
    try:
        import torch
    except ImportError:  # pip and the like, outside the venv's torch
        return
    torch.cpu._is_amx_tile_supported = _no_amx
    torch._C._cpu._is_amx_tile_supported = _no_amx


def _no_amx():
    return False


if os.environ.get("W4JIT_AS_CPU"):
    _emulate(os.environ["W4JIT_AS_CPU"])
