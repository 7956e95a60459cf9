"""python3 -m w4jit.bench.moe on its tiny preset: every path agrees with
the others before it is timed, and the table and CSV carry every row."""
import csv

import pytest

from w4jit.bench import moe as bench_moe


def test_tiny_run_writes_every_row(tmp_path, capsys):
    out = tmp_path / "moe.csv"
    assert bench_moe.main(["--presets", "tiny", "--tokens", "1,5",
                           "--reps", "2", "--threads", "2",
                           "--csv", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == bench_moe.CSV_COLUMNS
    # 2 routings x 2 token counts x 2 modes.
    assert len(rows) == 8
    for r in rows:
        assert float(r["fused_min_us"]) > 0
        assert float(r["fused_over_loop_p50"]) > 0
        assert float(r["loop_rel_diff"]) <= bench_moe.TOLERANCE[r["mode"]]
    assert {r["routing"] for r in rows} == {"uniform", "skewed"}
    printed = capsys.readouterr().out
    assert printed.count("| tiny |") == 8


def test_gpt_oss_shaped_preset_runs_swigluoai_with_biases(capsys):
    """tiny-oai has gpt-oss's gate (swigluoai, interleaved w13 rows), biases
    and group 32: the fused layer, the per-expert loop and bf16 agree."""
    assert bench_moe.main(["--presets", "tiny-oai", "--tokens", "3",
                           "--reps", "1", "--threads", "2"]) == 0
    out = capsys.readouterr()
    assert out.out.count("| tiny-oai |") == 4
    assert "swigluoai, biases" in out.err
    assert bench_moe.preset_gate("gpt-oss-20b") == ("swigluoai", 32, True)
    assert bench_moe.PRESETS["gpt-oss-120b"] == (2880, 2880, 128, 4)


@pytest.mark.parametrize("argv,needle", [
    (["--presets", "llama"], "'llama' is not one of"),
    (["--tokens", "0"], "each must be >= 1"),
    (["--modes", "w8a8"], "'w8a8' is not one of"),
    (["--presets", "tiny", "--group-size", "96"], "--group-size 96"),
])
def test_bad_options_are_named(argv, needle, capsys):
    with pytest.raises(SystemExit):
        bench_moe.main(argv)
    assert needle in capsys.readouterr().err
