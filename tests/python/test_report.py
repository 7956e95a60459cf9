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


def test_derived_figures_reproduce_the_stored_runs():
    """The stored runs' speedups and efficiencies were written by the C++
    before they moved here; derive.py gives the same."""
    run = report.load(LAYERS)
    by = {(r["impl"], r["layer"], r["m"], r["cache"]): r for r in run["rows"]}
    for (impl, layer, m, cache), r in by.items():
        peer = by.get(("onednn_bf16", layer, m, cache))
        if impl in ("w4a16", "da8w4") and r["status"] == "ok" and peer \
                and peer["status"] == "ok":
            assert r["speedup_vs_onednn_bf16"] == pytest.approx(
                peer["time_us"] / r["time_us"])
    scaling = report.load(SCALING)["scaling"]
    assert any(r["threads"] == 1 and r["efficiency"] == 1.0 for r in scaling)


def test_derived_model_act_order_accuracy_and_moe():
    from w4jit.report.derive import derive
    model_row = {"status": "ok", "m": 4, "time_ms": 20.0, "min_ms": 16.0,
                 "p90_ms": 24.0, "weight_bytes": 330_400_000, "layers": 12,
                 "model_layers": 48, "read_gbps": 40.0, "read_gbps_best": 50.0,
                 "routing": "uniform", "macs": 2e9, "peak_gmacs": 50.0,
                 "peak_gmacs_best": 100.0}
    memory = dict(model_row, macs=1e8)
    run = derive({
        "model": {"rows": [model_row, memory]},
        "act_order": [{"status": "ok", "plain_p50_us": 1000.0,
                       "plain_min_us": 900.0, "act_p50_us": 1050.0,
                       "act_min_us": 918.0, "copy_p50_us": 990.0,
                       "copy_min_us": 909.0},
                      {"status": "FAILED", "plain_p50_us": 1.0,
                       "plain_min_us": 1.0, "act_p50_us": 2.0,
                       "act_min_us": 2.0, "copy_p50_us": 1.0,
                       "copy_min_us": 1.0}],
        "accuracy": [
            {"status": "ok", "impl": "w4a16", "act_quant": "", "layer": "o",
             "m": 16, "rel_error": 0.002, "p50_us": 2000.0, "min_us": 1800.0},
            {"status": "ok", "impl": "da8w4", "act_quant": "per_token",
             "layer": "o", "m": 16, "rel_error": 0.08, "p50_us": 1000.0,
             "min_us": 900.0}],
        "moe": [{"min_us": 100.0, "touched_bytes": 2e7,
                 "read_bytes_per_s": 4e11, "macs": 1e8,
                 "peak_macs_per_s": 1e12}]})
    r = run["model"]["rows"][0]
    assert r["tokens_per_s"] == pytest.approx(200.0)
    assert r["model_tokens_per_s"] == pytest.approx(50.0)  # 12 of 48 layers
    assert r["model_tokens_per_s_best"] == pytest.approx(62.5)  # the min
    assert r["weight_gbps"] == pytest.approx(16.52)
    assert r["read_pct"] == pytest.approx(100 * 16.52 / 40)
    assert r["tail"] == pytest.approx(1.5)
    assert r["peak_pct"] == pytest.approx(200.0)  # 100 GMAC/s of 50
    assert r["peak_pct_min"] == pytest.approx(125.0)  # 125 of 100
    # 330.4 MB at 50 GB/s: 6.6 ms; 2e9 MACs at 100 GMAC/s: 20 ms.
    assert r["bound"] == "compute"
    assert run["model"]["rows"][1]["bound"] == "memory"
    ok, failed = run["act_order"]
    assert ok["act_over_plain_p50"] == pytest.approx(1.05)
    assert ok["copy_over_plain_min"] == pytest.approx(1.01)
    assert failed["act_over_plain_p50"] == 0.0
    w4a16, token = run["accuracy"]
    assert token["error_over_w4a16"] == pytest.approx(40.0)
    assert w4a16["over_per_token_p50"] == pytest.approx(2.0)
    moe = run["moe"][0]
    assert moe["roof_pct"] == pytest.approx(50.0)
    assert moe["peak_pct"] == pytest.approx(100.0)
    assert moe["bound"] == "compute"
