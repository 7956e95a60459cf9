"""Two runs side by side: per row present in both (the same section, mode,
layer, M and setting), the ratio of their times, as llama.cpp's
compare-llama-bench.py does."""
from . import sections

# The fields that name a row in each section, and the time compared.
KEYS = {
    "rows": (("impl", "layer", "n", "k", "group_size", "m", "cache"), "time_us"),
    "scaling": (("impl", "backend", "layer", "m", "threads"), "time_us"),
    "act_order": (("impl", "layer", "m"), "act_p50_us"),
    "accuracy": (("impl", "layer", "m", "act_quant"), "p50_us"),
    "model": (("impl", "model", "variant", "step", "m", "part", "prefetch",
               "tuning", "huge_pages"), "time_ms"),
    "moe": (("model", "mode", "routing", "tokens"), "median_us"),
    "winners": (("mode", "layer", "n", "k", "group_size", "m"), "tuned_us"),
    "candidates": (("mode", "layer", "n", "k", "group_size", "m", "cold",
                    "params"), "median_us"),
}


def compare(base, new):
    """[(section, key, base time, new time, base / new)] for every row both
    runs have and both timed (status ok where there is one)."""
    out = []
    base_sections, new_sections = sections(base), sections(new)
    for name, (fields, time) in KEYS.items():
        def index(rows):
            return {tuple(r.get(f) for f in fields): r for r in rows
                    if r.get("status", "ok") == "ok" and r.get(time)}
        a = index(base_sections.get(name, []))
        b = index(new_sections.get(name, []))
        for key in a:
            if key in b:
                ta, tb = a[key][time], b[key][time]
                label = " ".join(str(k) for k in key if k not in (None, ""))
                out.append((name, label, ta, tb, ta / tb))
    return out


def markdown(base, new):
    lines = [f"base: {base.get('date_utc')} ({base.get('w4jit_version')}), "
             f"new: {new.get('date_utc')} ({new.get('w4jit_version')}); "
             "speedup = base time / new time\n",
             "| section | row | base | new | speedup |", "|---|---|---|---|---|"]
    for name, label, ta, tb, ratio in compare(base, new):
        lines.append(f"| {name} | {label} | {ta:.4g} | {tb:.4g} | {ratio:.2f} |")
    return "\n".join(lines) + "\n"
