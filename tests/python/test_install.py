"""The package works from an install, not only from the build tree:
cmake --install into a temporary prefix, then import it there in a fresh
interpreter with only that prefix on PYTHONPATH."""
import os
import shutil
import subprocess
import sys

import pytest

BUILD_DIR = os.environ.get("W4JIT_BUILD_DIR")


@pytest.mark.skipif(not BUILD_DIR, reason="W4JIT_BUILD_DIR not set (ctest "
                    "sets it to the build tree)")
def test_installed_package_imports_and_runs(tmp_path):
    cmake = os.environ.get("W4JIT_CMAKE") or shutil.which("cmake")
    subprocess.run([cmake, "--install", BUILD_DIR, "--prefix", str(tmp_path)],
                   check=True, stdout=subprocess.DEVNULL)
    site = tmp_path / "lib" / "python3" / "dist-packages"
    assert (site / "w4jit" / "libw4jit_torch.so").exists()
    code = (
        "import torch, w4jit\n"
        "torch.set_num_threads(2)\n"
        f"assert w4jit.__file__.startswith({str(site)!r}), w4jit.__file__\n"
        "q = torch.randint(-8, 8, (32, 64), dtype=torch.int8)\n"
        "s = torch.rand(1, 32)\n"
        "r = torch.ops.w4jit.woq_repack_weight(q)\n"
        "y = torch.ops.w4jit.woq_linear(torch.randn(2, 64), r.t(), s, None,"
        " None)\n"
        "assert y.shape == (2, 32)\n"
        "print('ok')\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "W4JIT_TORCH_LIBRARY")}
    env["PYTHONPATH"] = str(site)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                         check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "ok"
