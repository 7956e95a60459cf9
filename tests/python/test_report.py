"""python3 -m w4jit.report on stored runs (tests/python/data: a layers job's
and a scaling job's bench.json): the tables, the comparison of two runs and,
with matplotlib, the charts."""
import csv
import copy
import json
import os

import pytest

from w4jit import report
from w4jit.report import __main__ as cli
from w4jit.report import compare, tables

DATA = os.path.join(os.path.dirname(__file__), "data")
LAYERS = os.path.join(DATA, "bench-layers.json")
SCALING = os.path.join(DATA, "bench-scaling.json")


def test_tables_have_every_row_and_key(tmp_path):
    run = report.load(LAYERS)
    written = tables.write_tables(run, str(tmp_path))
    assert sorted(os.path.basename(p) for p in written) == [
        "bench.csv", "layers.csv", "report.md"]
    with open(tmp_path / "bench.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(run["rows"])
    assert set(rows[0]) == set(run["rows"][0])
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "| impl | layer | M |" in md
    assert md.count("\n| w4a16 |") == sum(
        r["impl"] == "w4a16" for r in run["rows"])


def test_a_run_of_another_schema_is_refused(tmp_path):
    bad = tmp_path / "bench.json"
    bad.write_text(json.dumps({"schema": "w4jit-bench/0"}))
    with pytest.raises(ValueError, match="schema"):
        report.load(str(bad))


def test_compare_gives_the_ratio_per_matching_row():
    base = report.load(LAYERS)
    new = copy.deepcopy(base)
    for r in new["rows"]:
        r["time_us"] /= 2  # twice as fast
    new["rows"] = new["rows"][1:]  # one row only in the base
    pairs = compare.compare(base, new)
    ok = [r for r in base["rows"][1:] if r["status"] == "ok" and r["time_us"]]
    assert len(pairs) == len(ok)
    assert all(abs(p[4] - 2.0) < 1e-9 for p in pairs)
    assert "| rows | w4a16 o_proj" in compare.markdown(base, new)


def test_charts_render_from_a_stored_run(tmp_path):
    pytest.importorskip("matplotlib", reason="python3-matplotlib is not "
                        "installed (the report's optional extra)")
    from w4jit.report import charts
    written = charts.draw_charts(report.load(LAYERS), str(tmp_path), "png")
    written += charts.draw_charts(report.load(SCALING), str(tmp_path), "svg")
    assert sorted(os.path.basename(p) for p in written) == [
        "roofline.png", "scaling.svg", "speedup.png"]
    for p in written:
        assert os.path.getsize(p) > 1000, p
    assert (tmp_path / "scaling.svg").read_text().lstrip().startswith("<?xml")


def test_command_line_writes_tables_and_charts(tmp_path, capsys):
    assert cli.main([SCALING, f"--out={tmp_path}", "--no-charts"]) == 0
    assert (tmp_path / "scaling.csv").exists()
    assert "wrote" in capsys.readouterr().out
    assert cli.main(["compare", SCALING, SCALING]) == 0
    assert "| scaling |" in capsys.readouterr().out


def test_a_sweep_is_tabulated_and_compared(tmp_path):
    point = {"mode": "w4a16", "layer": "tiny", "n": 64, "k": 256,
             "group_size": 128, "m": 1}
    sweep = {"schema": "w4jit-sweep/1", "cpu_class": "x", "threads": 2,
             "notes": [], "budget_exhausted": False,
             "winners": [dict(point, default_us=10.0, tuned_us=8.0,
                              params="defaults")],
             "candidates": [dict(point, cold=True, group="prefetch",
                                 params="prefetch_distance=0", status="ok",
                                 median_us=9.0, gain=1.1)]}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(sweep))
    run = report.load(str(path))
    written = tables.write_tables(run, str(tmp_path))
    assert sorted(os.path.basename(p) for p in written) == [
        "candidates.csv", "report.md", "winners.csv"]
    assert "# w4jit sweep: cpu class x" in (tmp_path / "report.md").read_text()
    faster = json.loads(json.dumps(sweep))
    faster["winners"][0]["tuned_us"] = 4.0
    pairs = compare.compare(run, faster)
    assert [(p[0], p[4]) for p in pairs] == [("winners", 2.0),
                                             ("candidates", 1.0)]
