"""The figures a bench.json's measurements imply, computed here rather than
in the C++ that measured them (C++ measures, Python reports): each
function adds keys to the rows of one section, in place. `load` runs them
all, so the tables, charts and comparisons see the same rows a reader
would compute by hand.

- rows: speedup_vs_onednn_bf16 / _u8s8, time(peer) / time(row) of the
  same layer, M and cache state, for w4jit's own rows;
- scaling: efficiency, p50(1 thread) / (threads x p50), same mode, backend,
  layer and M;
- act_order: act_over_plain_p50 / _min and copy_over_plain_p50 / _min;
- accuracy: error_over_w4a16 (rel_error / W4A16's at the layer and M) and
  over_per_token_p50 / _min (time / DA8W4 per-token's, ok rows);
- model: tokens_per_s, weight_gbps(_max), read_pct(_min), tail,
  model_tokens_per_s(_best), and for a MoE model peak_pct(_min) and the
  bound that binds;
- moe: roof_pct, peak_pct and the bound that binds.
A ratio whose inputs are missing or not ok is 0 ("unknown"), as the C++
wrote it before these moved here.
"""

MODES = ("w4a16", "da8w4")


def _ok(row):
    return row.get("status", "ok") == "ok"


def _ratio(a, b):
    return a / b if a and b else 0.0


def _pct(a, b):
    return 100.0 * _ratio(a, b)


def _bound(memory, compute):
    """The longer of two shares (or times) binds; "" if neither is known."""
    if not memory and not compute:
        return ""
    return "compute" if compute > memory else "memory"


def rows(run):
    peers = {}
    for r in run.get("rows", []):
        if _ok(r) and r["impl"].startswith("onednn_"):
            peers[(r["impl"], r["layer"], r["n"], r["k"], r["m"],
                   r["cache"])] = r["time_us"]
    for r in run.get("rows", []):
        for peer in ("onednn_bf16", "onednn_u8s8"):
            key = (peer, r["layer"], r["n"], r["k"], r["m"], r["cache"])
            mine = r["impl"] in MODES and _ok(r)
            r[f"speedup_vs_{peer}"] = (
                _ratio(peers.get(key), r["time_us"]) if mine else 0.0)


def scaling(run):
    one = {(r["impl"], r["backend"], r["layer"], r["m"]): r["time_us"]
           for r in run.get("scaling", []) if _ok(r) and r["threads"] == 1}
    for r in run.get("scaling", []):
        base = one.get((r["impl"], r["backend"], r["layer"], r["m"]))
        r["efficiency"] = (_ratio(base, r["threads"] * r["time_us"])
                           if _ok(r) else 0.0)


def act_order(run):
    for r in run.get("act_order", []):
        for what in ("act", "copy"):
            for stat in ("p50", "min"):
                r[f"{what}_over_plain_{stat}"] = (
                    _ratio(r[f"{what}_{stat}_us"], r[f"plain_{stat}_us"])
                    if _ok(r) else 0.0)


def accuracy(run):
    rows_ = run.get("accuracy", [])
    w4a16 = {(r["layer"], r["m"]): r["rel_error"] for r in rows_
             if r["impl"] == "w4a16" and r.get("rel_error")}
    token = {(r["layer"], r["m"]): r for r in rows_
             if _ok(r) and r["act_quant"] == "per_token"}
    for r in rows_:
        at = (r["layer"], r["m"])
        r["error_over_w4a16"] = _ratio(r.get("rel_error"), w4a16.get(at))
        t = token.get(at) if _ok(r) else None
        for stat, key in (("p50", "p50_us"), ("min", "min_us")):
            r[f"over_per_token_{stat}"] = _ratio(r[key], t[key]) if t else 0.0


def model(run):
    for r in (run.get("model") or {}).get("rows", []):
        if not _ok(r):
            continue
        p50_s, min_s = r["time_ms"] * 1e-3, r["min_ms"] * 1e-3
        r["tokens_per_s"] = _ratio(r["m"], p50_s)
        r["weight_gbps"] = _ratio(r["weight_bytes"], p50_s) * 1e-9
        r["weight_gbps_max"] = _ratio(r["weight_bytes"], min_s) * 1e-9
        r["read_pct"] = _pct(r["weight_gbps"], r.get("read_gbps"))
        r["read_pct_min"] = _pct(r["weight_gbps_max"],
                                 r.get("read_gbps_best"))
        r["tail"] = _ratio(r.get("p90_ms"), r["min_ms"])
        # The whole model's tokens/s: a step's time scales with its
        # decoder layers.
        scale = _ratio(r.get("layers"), r.get("model_layers"))
        r["model_tokens_per_s"] = r["tokens_per_s"] * scale
        r["model_tokens_per_s_best"] = _ratio(r["m"], min_s) * scale
        if r.get("routing"):
            gmacs = _ratio(r.get("macs"), p50_s) * 1e-9
            gmacs_max = _ratio(r.get("macs"), min_s) * 1e-9
            r["peak_pct"] = _pct(gmacs, r.get("peak_gmacs"))
            r["peak_pct_min"] = _pct(gmacs_max, r.get("peak_gmacs_best"))
            # The longer of reading the step's bytes at the read's best
            # and doing its MACs at the peak's best.
            r["bound"] = _bound(
                _ratio(r["weight_bytes"], r.get("read_gbps_best")),
                _ratio(r.get("macs"), r.get("peak_gmacs_best")))


def moe(run):
    for r in run.get("moe", []):
        min_s = r["min_us"] * 1e-6
        r["roof_pct"] = _pct(_ratio(r["touched_bytes"], min_s),
                             r.get("read_bytes_per_s"))
        r["peak_pct"] = _pct(_ratio(r["macs"], min_s),
                             r.get("peak_macs_per_s"))
        r["bound"] = _bound(r["roof_pct"], r["peak_pct"])


def derive(run):
    """Every section's derived figures, in place; returns `run`."""
    for section in (rows, scaling, act_order, accuracy, model, moe):
        section(run)
    return run
