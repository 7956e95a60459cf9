"""The old module names of the benchmarks (w4jit.bench_torch, ...), kept
for one release (0.1.x) as aliases of w4jit.bench.*: `python3 -m
w4jit.bench_moe` runs w4jit.bench.moe, and `from w4jit import bench_moe`
gets that module itself (so a test's monkeypatch reaches it)."""
import importlib
import runpy
import sys


def alias(old, new):
    if old == "__main__":
        runpy.run_module(f"w4jit.bench.{new}", run_name="__main__")
    else:
        sys.modules[old] = importlib.import_module(f"w4jit.bench.{new}")
