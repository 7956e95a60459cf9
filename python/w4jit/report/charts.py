"""The charts of a bench.json, drawn with matplotlib (the package's optional
"report" extra): the roofline of the layers job, its speedup over oneDNN by
M, and the thread scaling of the scaling job."""
import os

IMPL_TITLES = {"w4a16": "W4A16", "da8w4": "DA8W4",
               "onednn_bf16": "oneDNN bf16", "onednn_u8s8": "oneDNN u8s8"}
CEILINGS = ("L2-sized", "L3-sized", "DRAM-sized")


def _pyplot():
    """matplotlib's pyplot on the file-only backend; ImportError without it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _ok(rows):
    return [r for r in rows if r.get("status") == "ok"]


def roofline(run, ax):
    """Achieved GFLOP/s against arithmetic intensity (FLOP per weight byte),
    log-log, under the measured compute peaks and read bandwidths. Compute-
    bound rows are squares, memory-bound rows circles."""
    rows = [r for r in _ok(run.get("rows", [])) if r.get("weight_bytes")]
    xs = [2.0 * r["m"] * r["n"] * r["k"] / r["weight_bytes"] for r in rows]
    lo, hi = (min(xs) / 2, max(xs) * 2) if xs else (0.1, 1000.0)
    for peak in run.get("peaks", []):
        if peak.get("available") and peak.get("gmacs", 0) > 0:
            y = 2 * peak["gmacs"]
            ax.plot([lo, hi], [y, y], ":", color="grey", lw=1)
            ax.annotate(peak["key"], (hi, y), fontsize=6, ha="right",
                        va="bottom", color="grey")
    for bw in run.get("bandwidths", []):
        if bw.get("label") in CEILINGS:
            ax.plot([lo, hi], [bw["gbps"] * lo, bw["gbps"] * hi], "--",
                    color="grey", lw=1)
            ax.annotate(f"{bw['label']} {bw['gbps']:.0f} GB/s",
                        (lo, bw["gbps"] * lo), fontsize=6, color="grey")
    for i, impl in enumerate(run.get("options", {}).get("impls", [])):
        for bound, marker in (("compute", "s"), ("memory", "o"), ("", "x")):
            pts = [(x, r["gflops"]) for x, r in zip(xs, rows)
                   if r["impl"] == impl and r.get("bound", "") == bound]
            if pts:
                ax.scatter(*zip(*pts), marker=marker, s=18, color=f"C{i}",
                           label=f"{IMPL_TITLES.get(impl, impl)} {bound}".strip())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP per weight byte")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"roofline: {run.get('preset')}, {run.get('threads')} threads")
    ax.legend(fontsize=6)


def speedup(run, ax):
    """Each w4jit mode's speedup over oneDNN bf16 by M (hot rows), one line
    per layer."""
    rows = [r for r in _ok(run.get("rows", []))
            if r.get("cache") == "hot" and r.get("speedup_vs_onednn_bf16")]
    for impl in ("w4a16", "da8w4"):
        for layer in sorted({r["layer"] for r in rows if r["impl"] == impl}):
            pts = sorted((r["m"], r["speedup_vs_onednn_bf16"]) for r in rows
                         if r["impl"] == impl and r["layer"] == layer)
            ax.plot(*zip(*pts), marker="o", label=f"{IMPL_TITLES[impl]} {layer}")
    ax.axhline(1.0, color="grey", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M")
    ax.set_ylabel("× oneDNN bf16 (p50)")
    ax.set_title("speedup over oneDNN bf16")
    if ax.get_lines()[:-1]:
        ax.legend(fontsize=6)


def scaling(run, ax):
    """Parallel efficiency against threads, per mode, backend and M."""
    rows = _ok(run.get("scaling", []))
    keys = sorted({(r["impl"], r["backend"], r["m"]) for r in rows})
    for impl, backend, m in keys:
        pts = sorted((r["threads"], r["efficiency"]) for r in rows
                     if (r["impl"], r["backend"], r["m"]) == (impl, backend, m))
        ax.plot(*zip(*pts), marker="o",
                label=f"{IMPL_TITLES.get(impl, impl)} {backend} M={m}")
    ax.set_xlabel("threads")
    ax.set_ylabel("efficiency")
    ax.set_ylim(0, 1.1)
    ax.set_title("scaling: p50(1 thread) / (threads × p50)")
    ax.legend(fontsize=6)


def draw_charts(run, out_dir, fmt="png"):
    """roofline.<fmt> and speedup.<fmt> for a layers run, scaling.<fmt> for
    a scaling run; the paths written. ImportError without matplotlib."""
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    charts = []
    if any(r.get("status") == "ok" for r in run.get("rows", [])):
        charts.append(("roofline", roofline))
        if any(r.get("speedup_vs_onednn_bf16") for r in run["rows"]):
            charts.append(("speedup", speedup))
    if run.get("scaling"):
        charts.append(("scaling", scaling))
    written = []
    for name, draw in charts:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        draw(run, ax)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{name}.{fmt}")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written
