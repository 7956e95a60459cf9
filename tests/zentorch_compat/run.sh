#!/bin/sh
# Runs ZenDNN-pytorch-plugin's int4 op tests against w4jit (README.md).
#
#   tests/zentorch_compat/run.sh ZENTORCH_CHECKOUT [pytest args...]
#
# ZENTORCH_CHECKOUT: a checkout of github.com/amd/ZenDNN-pytorch-plugin
# (kept outside this repository). PYTHON: an interpreter with torch 2.x,
# hypothesis, pytest and their test utilities' imports (transformers,
# numpy); W4JIT_PYTHONPATH: where the w4jit package with its built
# libw4jit_torch.so is (default: build/torch214/python, for a build against
# that interpreter's torch). Extra arguments go to pytest (default: the two
# int4 op test files).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
checkout=${1:?usage: run.sh ZENTORCH_CHECKOUT [pytest args...]}
shift
tests="$checkout/test/unittests"
[ -d "$tests/op_tests" ] || { echo "run.sh: no $tests/op_tests" >&2; exit 2; }
if [ $# -eq 0 ]; then
  set -- op_tests/test_woq_linear.py op_tests/test_woq_linear_asymmetric.py
fi
: "${PYTHON:=python3}"
: "${W4JIT_PYTHONPATH:=$repo/build/torch214/python}"
export W4JIT_NUMERICS="${W4JIT_NUMERICS:-zentorch}"
cd "$tests"
PYTHONPATH="$W4JIT_PYTHONPATH:$here${PYTHONPATH:+:$PYTHONPATH}" \
  exec "$PYTHON" -m pytest -p no:cacheprovider -p w4jit_for_zentorch -rA "$@"
