"""python3 -m w4jit.report bench.json [--out=DIR] [--format=png|svg]
python3 -m w4jit.report compare BASE.json NEW.json"""
import argparse
import os
import sys

from . import compare, load, tables


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compare"]:
        p = argparse.ArgumentParser(prog="python3 -m w4jit.report compare",
                                    description=compare.__doc__)
        p.add_argument("base")
        p.add_argument("new")
        a = p.parse_args(argv[1:])
        sys.stdout.write(compare.markdown(load(a.base), load(a.new)))
        return 0
    p = argparse.ArgumentParser(
        prog="python3 -m w4jit.report",
        description="Tables (CSV, markdown) and charts (matplotlib) of a "
                    "`w4jit bench` run's bench.json; `compare BASE NEW` "
                    "compares two runs.")
    p.add_argument("json", help="bench.json of a run")
    p.add_argument("--out", default=None,
                   help="output folder (default: the JSON's folder)")
    p.add_argument("--format", choices=("png", "svg"), default="png")
    p.add_argument("--no-charts", action="store_true",
                   help="tables only (no matplotlib needed)")
    a = p.parse_args(argv)
    out = a.out or os.path.dirname(os.path.abspath(a.json))
    run = load(a.json)
    written = tables.write_tables(run, out)
    if not a.no_charts:
        from .charts import draw_charts  # matplotlib is imported by the call
        try:
            written += draw_charts(run, out, a.format)
        except ImportError as e:
            print(f"w4jit.report: no charts ({e}); install matplotlib "
                  "(python3-matplotlib, or pip install w4jit[report])",
                  file=sys.stderr)
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
