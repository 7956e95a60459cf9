#!/usr/bin/env bash
# The torch 2.x virtual environment: PyPI's torch at the release zentorch's
# current wheel is built for, zentorch itself, and what the test suite and
# `pip install --no-build-isolation .` need (hypothesis, pytest, numpy,
# setuptools, wheel). Cached outside the clone, keyed on the two versions:
#
#   ${W4JIT_VENV_CACHE:-$HOME/.cache/w4jit}/venv-torch<T>-zentorch<Z>
#
# reused when it is present and healthy (it imports every package, at the
# pinned versions), rebuilt from scratch when it is not. Prints the venv's
# path as the last line of stdout; progress goes to stderr.
#
#   scripts/torch-venv.sh            (torch 2.14.0, zentorch 2.14.0.1)
#   W4JIT_TORCH_VERSION=... W4JIT_ZENTORCH_VERSION=... scripts/torch-venv.sh
#
# zentorch 2.14.0.1's metadata pins no torch; its release notes name torch
# 2.14.0, the release its ops are built against (docs/torch-2x.md). PyPI's
# torch for Linux is the CUDA build: the venv takes 5.7 GB on disk, 3.2 GB
# of it CUDA libraries nothing here uses (a cold install: 139 s on the
# project's VM; docs/torch-2x.md).
set -euo pipefail
torch_version="${W4JIT_TORCH_VERSION:-2.14.0}"
zentorch_version="${W4JIT_ZENTORCH_VERSION:-2.14.0.1}"
base_python="${W4JIT_VENV_PYTHON:-/usr/bin/python3}"
cache="${W4JIT_VENV_CACHE:-$HOME/.cache/w4jit}"
venv="$cache/venv-torch${torch_version}-zentorch${zentorch_version}"

healthy() {
  [ -x "$venv/bin/python" ] || return 1
  (cd / && "$venv/bin/python" - "$torch_version" "$zentorch_version" \
      >/dev/null 2>&1) <<'PY'
import sys
import hypothesis, numpy, pytest, setuptools, wheel  # noqa: F401
import torch
import zentorch
want_torch, want_zentorch = sys.argv[1], sys.argv[2]
assert torch.__version__.split("+")[0] == want_torch, torch.__version__
assert zentorch.__version__ == want_zentorch, zentorch.__version__
assert hasattr(torch.ops.zentorch, "zentorch_woq_linear")
PY
}

mkdir -p "$cache"
# One builder at a time; a second caller waits, then finds it healthy.
exec 9>"$venv.lock"
flock 9
if healthy; then
  echo "torch-venv: reusing $venv" >&2
else
  echo "torch-venv: creating $venv (torch $torch_version, zentorch" \
       "$zentorch_version, from PyPI)" >&2
  start=$(date +%s)
  rm -rf "$venv"
  "$base_python" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "torch==$torch_version" "zentorch==$zentorch_version" \
    hypothesis pytest setuptools wheel numpy
  if ! healthy; then
    echo "torch-venv: $venv was installed but does not import torch" \
         "$torch_version and zentorch $zentorch_version" >&2
    exit 1
  fi
  echo "torch-venv: created in $(( $(date +%s) - start )) s," \
       "$(du -sh "$venv" | cut -f1)" >&2
fi
echo "$venv"
