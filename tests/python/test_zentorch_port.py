"""zentorch's own int4 op tests, as ported in zentorch_port_cases.py, on
every ISA tier this CPU runs: one subprocess per tier with W4JIT_ISA set
(the tier is read once per process), skipped with a message for a tier the
CPU lacks."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TIERS = ["ref", "avx2", "avx512_vnni", "avx512_bf16"]


@pytest.mark.parametrize("tier", TIERS)
def test_zentorch_op_tests_on_tier(tier):
    env = dict(os.environ, W4JIT_ISA=tier, W4JIT_PORT_TIER=tier)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
         os.path.join(HERE, "zentorch_port_cases.py")],
        env=env, cwd=HERE, capture_output=True, text=True, timeout=540)
    tail = r.stdout[-6000:] + r.stderr[-2000:]
    assert r.returncode == 0, tail
    if " passed" not in r.stdout:
        reasons = [ln for ln in r.stdout.splitlines() if "SKIPPED" in ln]
        pytest.skip(f"W4JIT_ISA={tier}: " + (reasons[0] if reasons else tail))
    print(tail)
