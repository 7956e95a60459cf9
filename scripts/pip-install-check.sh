#!/usr/bin/env bash
# The README's pip install, from a clean clone of HEAD, in a temporary
# directory: a fresh venv over the system site packages (Debian's torch),
# `pip install --no-build-isolation` of the clone (nothing fetched: no
# dependencies, no index), then, from another directory, `import w4jit` and
# one woq_linear call checked against a torch reference. Prints a pass line.
#
#   scripts/pip-install-check.sh [PYTHON]   (default /usr/bin/python3)
#
# Only committed work is checked: the clone is of HEAD, not of the working
# tree.
set -euo pipefail
python="${1:-/usr/bin/python3}"
repo="$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/w4jit-pip.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

git clone -q --no-hardlinks "$repo" "$tmp/src"
"$python" -m venv --system-site-packages "$tmp/venv"
(cd "$tmp/src" && "$tmp/venv/bin/pip" install -q --no-build-isolation \
  --no-deps --no-index .)

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
"$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import os
import sys

import torch
import w4jit

venv = sys.argv[1]
assert w4jit.__file__.startswith(venv), w4jit.__file__
assert os.path.dirname(w4jit.library_path()) == os.path.dirname(
    w4jit.__file__), w4jit.library_path()
torch.manual_seed(0)
q = torch.randint(-8, 8, (64, 256), dtype=torch.int8)
s = torch.rand(2, 64) * 0.02 + 0.001
x = torch.randn(3, 256)
y = torch.ops.w4jit.woq_linear(x, torch.ops.w4jit.woq_repack_weight(q).t(),
                               s, None)
w = q.double() * s.double().t().repeat_interleave(128, dim=1)
want = x.double() @ w.t()
err = (y.double() - want).abs().max().item()
mag = (x.double().abs() @ w.abs().t()).max().item()
assert err <= 1e-5 * mag + 1e-6, (err, mag)
# The subpackages are installed too: the benchmarks and the vLLM plugin.
import w4jit.bench.moe
import w4jit.vllm
assert w4jit.bench.moe.__file__.startswith(venv), w4jit.bench.moe.__file__
print(f"pip-install-check: PASS (torch {torch.__version__}, "
      f"{w4jit.library_path()}, max err {err:.2e})")
PY
