"""Reports of `w4jit bench` runs: C++ measures, Python reports.

`w4jit bench <job>` and `w4jit sweep` write the versioned JSON of a run
(bench.json, schema "w4jit-bench/2"; sweep.json, "w4jit-sweep/1") and print
a short table. This package
turns that JSON into what a reader wants:

- derived figures: speedups over the peers, efficiencies, ratios, a
  model's tokens/s and shares of its ceilings (`derive.py`);
- tables: one CSV per section of the run and a markdown summary
  (`tables.py`, standard library only);
- charts: the roofline and the thread scaling, drawn with matplotlib, an
  optional extra (`pip install w4jit[report]`, Debian's python3-matplotlib;
  `charts.py`);
- a comparison of two runs, per matching row the ratio of their times, as
  llama.cpp's compare-llama-bench.py does (`compare.py`).

    python3 -m w4jit.report bench.json --out=DIR
    python3 -m w4jit.report compare BASE.json NEW.json

The w4jit package itself loads the torch op library on import, so these
run in an interpreter that has torch (as the package's other modules do).
"""
import json

SCHEMAS = ("w4jit-bench/2", "w4jit-sweep/1")


def load(path):
    """The run at `path`, checked to be a bench.json or sweep.json this
    package reads, with the figures its measurements imply (derive.py)."""
    from .derive import derive
    with open(path, encoding="utf-8") as f:
        run = json.load(f)
    if run.get("schema") not in SCHEMAS:
        raise ValueError(f"{path}: schema {run.get('schema')!r}, want one of "
                         f"{', '.join(SCHEMAS)}")
    return derive(run)


def sections(run):
    """Each non-empty list of rows of the run, by name: rows (the layers
    job), layers (their creation), scaling, act_order, accuracy, model (its
    steps), moe; of a sweep, winners and candidates."""
    out = {}
    for name in ("rows", "layers", "scaling", "act_order", "accuracy", "moe",
                 "winners", "candidates"):
        if run.get(name):
            out[name] = run[name]
    model = run.get("model") or {}
    if model.get("rows"):
        out["model"] = model["rows"]
    return out
