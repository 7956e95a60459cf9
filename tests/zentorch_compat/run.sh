#!/bin/sh
# Runs ZenDNN-pytorch-plugin's int4 op tests against w4jit, or against
# zentorch itself for the baseline (README.md).
#
#   tests/zentorch_compat/run.sh [--against=w4jit|zentorch] ZENTORCH_CHECKOUT
#                                [pytest args...]
#
# ZENTORCH_CHECKOUT: a checkout of github.com/amd/ZenDNN-pytorch-plugin
# (kept outside this repository). PYTHON: an interpreter with torch 2.x,
# hypothesis, pytest and their test utilities' imports (transformers,
# expecttest); for --against=zentorch also zentorch (the project's torch
# 2.14 + zentorch venv has both). Extra arguments go to pytest (default:
# the two int4 op test files).
#
# --against=w4jit (the default): the plugin w4jit_for_zentorch points
# torch.ops.zentorch at w4jit, with W4JIT_NUMERICS=zentorch unless set.
# W4JIT_PYTHONPATH: where a w4jit package with its libw4jit_torch.so built
# for PYTHON's torch is; when unset, this script installs the working tree
# there itself (PYTHON's pip, as scripts/test-torch2.sh does), into
# build/zentorch-compat/site: the first run builds, later ones rebuild only
# what changed.
#
# --against=zentorch: the plugin zentorch_as_installed imports the real
# zentorch (and re-exports the fp16 queries its utilities expect). Its
# weight cache follows the environment: ZENDNNL_MATMUL_WEIGHT_CACHE=0
# turns it off.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
against=w4jit
case "${1:-}" in
  --against=w4jit | --against=zentorch) against=${1#--against=}; shift ;;
  --against=*) echo "run.sh: unknown $1 (w4jit or zentorch)" >&2; exit 2 ;;
esac
checkout=${1:?usage: run.sh [--against=w4jit|zentorch] ZENTORCH_CHECKOUT [pytest args...]}
shift
tests="$checkout/test/unittests"
[ -d "$tests/op_tests" ] || { echo "run.sh: no $tests/op_tests" >&2; exit 2; }
if [ $# -eq 0 ]; then
  set -- op_tests/test_woq_linear.py op_tests/test_woq_linear_asymmetric.py
fi
: "${PYTHON:=python3}"
if [ "$against" = zentorch ]; then
  plugin=zentorch_as_installed
  path=$here
else
  plugin=w4jit_for_zentorch
  if [ -z "${W4JIT_PYTHONPATH:-}" ]; then
    W4JIT_PYTHONPATH=$repo/build/zentorch-compat/site
    echo "run.sh: installing w4jit into $W4JIT_PYTHONPATH" >&2
    (cd "$repo" && "$PYTHON" -m pip install -q --disable-pip-version-check \
      --no-build-isolation --no-deps --no-index --upgrade \
      --target "$W4JIT_PYTHONPATH" .)
  fi
  path=$W4JIT_PYTHONPATH:$here
  export W4JIT_NUMERICS="${W4JIT_NUMERICS:-zentorch}"
fi
cd "$tests"
PYTHONPATH="$path${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
  exec "$PYTHON" -m pytest -p no:cacheprovider -p "$plugin" -rA "$@"
