#!/usr/bin/env bash
# The torch 2.x lane: the whole tests/python suite on PyPI's torch (the
# release zentorch's current wheel is built for), with zentorch installed
# beside w4jit.
#
#   1. scripts/torch-venv.sh: the cached venv (created on first use, 5.7 GB
#      from PyPI; reused afterwards).
#   2. `pip install --no-build-isolation --no-deps --no-index --target` of
#      this working tree into a scratch directory: the extension is built
#      against the venv's torch (CMake, through setup.py; the build tree is
#      kept under build/pip-torch<version> of the checkout, so a second run
#      rebuilds only what changed). The venv itself is never modified.
#   3. pytest on every tests/python/test_*.py, from a directory outside the
#      source tree, the scratch install first on PYTHONPATH.
#
#   scripts/test-torch2.sh [pytest args...]
#
# Environment: W4JIT_VENV_CACHE, W4JIT_TORCH_VERSION, W4JIT_ZENTORCH_VERSION
# as for scripts/torch-venv.sh.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="$(bash "$repo/scripts/torch-venv.sh" | tail -n 1)"
py="$venv/bin/python"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/w4jit-torch2.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
(cd "$repo" && "$venv/bin/pip" install -q --disable-pip-version-check \
  --no-build-isolation --no-deps --no-index --target "$tmp/site" .)
echo "test-torch2: built and installed into $tmp/site in" \
     "$(( $(date +%s) - start )) s" >&2

mkdir "$tmp/run"
cd "$tmp/run"
PYTHONPATH="$tmp/site" PYTHONDONTWRITEBYTECODE=1 "$py" - <<'PY'
import torch, w4jit
print(f"test-torch2: torch {torch.__version__}, {w4jit.library_path()}")
PY
# --rootdir keeps pytest's rootdir (and any ini file) at tests/python, not
# the checkout (whose torch/ folder is not the torch package).
PYTHONPATH="$tmp/site" PYTHONDONTWRITEBYTECODE=1 \
  "$py" -m pytest -q -p no:cacheprovider --rootdir "$repo/tests/python" \
  "$repo/tests/python" "$@"
