"""CSV and markdown tables of a bench.json (standard library only)."""
import csv
import io
import os

from . import sections

# The columns of the layers job's summary table, and their headings.
ROW_COLUMNS = [
    ("impl", "impl"), ("layer", "layer"), ("m", "M"), ("cache", "cache"),
    ("time_us", "p50 µs"), ("min_us", "min µs"), ("gflops", "GFLOP/s"),
    ("weight_gbps", "W GB/s"), ("roofline_pct", "roof %"),
    ("roofline_basis", "binding bound"), ("compute_op", "op"),
    ("speedup_vs_onednn_bf16", "× bf16"), ("speedup_vs_onednn_u8s8", "× u8s8"),
]


def columns(rows):
    """Every key of `rows`, in the order they first appear."""
    seen = {}
    for row in rows:
        for key in row:
            seen.setdefault(key, None)
    return list(seen)


def to_csv(rows):
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns(rows), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def cell(value):
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value).replace("|", "\\|")


def markdown_table(rows, cols):
    """`cols` is a list of (key, heading); keys a row lacks stay empty."""
    lines = ["| " + " | ".join(h for _, h in cols) + " |",
             "|" + "---|" * len(cols)]
    for row in rows:
        lines.append("| " + " | ".join(cell(row.get(k, "")) for k, _ in cols)
                     + " |")
    return "\n".join(lines) + "\n"


def markdown(run):
    """The run's header and one table per section."""
    cpu = run.get("cpu", {})
    if run.get("schema", "").startswith("w4jit-sweep"):
        out = [f"# w4jit sweep: cpu class {run.get('cpu_class')}\n",
               f"{run.get('threads')} threads\n"]
        for name, rows in sections(run).items():
            out.append(f"\n## {name}\n")
            out.append(markdown_table(rows, [(c, c) for c in columns(rows)]))
        return "".join(out)
    out = [f"# w4jit bench: {run.get('preset', '')}\n",
           f"{cpu.get('name', '')} ({cpu.get('isa', '')}), "
           f"{run.get('threads')} threads, {run.get('date_utc')}, "
           f"w4jit {run.get('w4jit_version')}, "
           f"oneDNN {run.get('onednn_version')}\n"]
    for name, rows in sections(run).items():
        out.append(f"\n## {name}\n")
        if name == "rows":
            out.append(markdown_table(rows, ROW_COLUMNS))
        else:
            cols = [(c, c) for c in columns(rows) if c not in ("note", "kernel")]
            out.append(markdown_table(rows, cols))
    return "".join(out)


def write_tables(run, out_dir):
    """<section>.csv for every section and report.md; the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, rows in sections(run).items():
        path = os.path.join(out_dir, ("bench" if name == "rows" else name)
                            + ".csv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(to_csv(rows))
        written.append(path)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write(markdown(run))
    written.append(path)
    return written
