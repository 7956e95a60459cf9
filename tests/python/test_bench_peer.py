"""Smoke test of python -m w4jit.bench.zentorch --quick: w4jit beside
zentorch and torch's int4 matmul on small shapes, outputs checked before
timing."""
import pytest
import torch

from w4jit.bench import zentorch as bench_zentorch


def _zentorch_or_skip():
    zen, why = bench_zentorch.load_zentorch()
    if zen is None:
        pytest.skip(f"zentorch: {why}")
    return zen


def test_forced_zentorch_garbage_is_caught():
    """Where zentorch is installed but its kernels cannot run (no
    AVX512_BF16), --force-zentorch calls its woq_linear anyway: the check
    before timing must leave it out, not time garbage."""
    zen, why = bench_zentorch.load_zentorch(force=True)
    if zen is None:
        pytest.skip(f"zentorch: {why}")
    if zen._C.is_bf16_supported():
        pytest.skip("zentorch's kernels run on this CPU")
    rows = bench_zentorch.main(["--quick", "--force-zentorch", "--min-time",
                                "0.01", "--skip-moe", "--m", "3",
                                "--host-modes", "inference"])
    assert "zentorch_woq" in rows[0]["skipped"], rows[0]
    assert "zentorch_woq" not in rows[0]["times"]
    assert "w4jit_woq" in rows[0]["times"]


def test_quick_run_checks_and_times_every_side(capsys):
    _zentorch_or_skip()
    rows = bench_zentorch.main(["--quick", "--threads", "2",
                                "--min-time", "0.01"])
    out = capsys.readouterr().out
    assert "w4jit vs zentorch" in out
    assert "overhead w4jit_woq - w4jit_linear_w4a16" in out
    linear = [r for r in rows if r["op"] == "linear"]
    moe = [r for r in rows if r["op"] == "fused_moe"]
    # Each cell in both host modes, its tensors made there.
    assert [(r["host"], r["m"]) for r in linear] == [
        ("inference", 1), ("inference", 4), ("no_grad", 1), ("no_grad", 4)]
    assert [(r["host"], r["m"]) for r in moe] == [
        ("inference", 1), ("inference", 4), ("no_grad", 1), ("no_grad", 4)]
    for r in linear:
        # w4jit's sides always run, within an ulp or two of the f64
        # reference (bf16 output: 0.5 ulp is the rounding alone).
        for col in ("w4jit_woq", "w4jit_woq_zn", "w4jit_dq",
                    "w4jit_linear_w4a16", "w4jit_linear_da8w4"):
            assert col in r["times"], r["skipped"]
        assert r["ulps"]["w4jit_woq"] <= 2.0
        assert r["ulps"]["w4jit_woq_zn"] <= 2.0
        # zentorch's and torch's sides are timed or say why not (zentorch's
        # kernels need AVX512_BF16).
        for col in ("zentorch_woq", "zentorch_dq", "zentorch_dq_int8",
                    "torch_int4pack"):
            assert col in r["times"] or col in r["skipped"], r
        if "zentorch_woq" in r["times"]:
            # Same numerics on both sides: the outputs agree closely.
            assert r["ulps"]["zentorch_woq~w4jit_woq_zn"] <= 2.0
    for r in moe:
        assert "w4jit_moe_da8w4" in r["times"], r["skipped"]
        assert "w4jit_moe_module_da8w4" in r["times"], r["skipped"]
        assert r["rel_l2"]["w4jit_moe_w4a16"] < 0.01
        assert "zentorch_moe" in r["times"] or "zentorch_moe" in r["skipped"]


def test_without_zentorch_the_rest_runs(monkeypatch):
    monkeypatch.setattr(bench_zentorch, "load_zentorch",
                        lambda force=False: (None, "hidden by the test"))
    rows = bench_zentorch.main(["--quick", "--min-time", "0.01", "--m", "2",
                                "--tokens", "3", "--host-modes", "no_grad"])
    assert [r["op"] for r in rows] == ["linear", "fused_moe"]
    linear, moe = rows
    assert "zentorch_woq" not in linear["times"]
    for col in ("w4jit_woq", "w4jit_woq_zn", "w4jit_dq"):
        assert col in linear["times"], linear["skipped"]
    assert linear["ulps"]["w4jit_woq"] <= 2.0
    assert linear["ulps"]["w4jit_woq_zn"] <= 2.0
    assert linear["rel_l2"]["w4jit_dq"] < 0.05
    assert "w4jit_moe_da8w4" in moe["times"], moe["skipped"]
    assert moe["rel_l2"]["w4jit_moe_w4a16"] < 0.01
