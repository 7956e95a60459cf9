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
source "$(dirname "$0")/lib/venv.sh"
venv_tag=torch-venv
venv="$venv_cache/venv-torch${torch_version}-zentorch${zentorch_version}"

venv_healthy() {
  "$venv/bin/python" - "$torch_version" "$zentorch_version" <<'PY'
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

venv_install() {
  "$venv/bin/pip" install -q --disable-pip-version-check \
    "torch==$torch_version" "zentorch==$zentorch_version" \
    hypothesis pytest setuptools wheel numpy matplotlib
}

venv_ensure
echo "$venv"
