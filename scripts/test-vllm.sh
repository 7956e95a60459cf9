#!/usr/bin/env bash
# The vLLM lane: tests/python/test_vllm_plugin.py inside vLLM's CPU venv
# (scripts/vllm-venv.sh), with this working tree installed there as the
# `w4jit` distribution (so vLLM finds its `vllm.general_plugins` entry
# point). Builds the extension against the venv's torch; the build tree is
# kept under build/ of the checkout, so a second run rebuilds only what
# changed. Unlike scripts/test-torch2.sh this modifies the venv (the plugin
# is found through installed metadata): one checkout per venv at a time.
#
#   scripts/test-vllm.sh [--as-cpu=avx512-vnni] [pytest args...]
#
# --as-cpu=avx512-vnni runs the lane as on an Ice Lake Xeon (AVX-512 VNNI,
# no AVX512_BF16, no AMX, no zentorch) on a bigger CPU: every Python process
# sees that CPU's flags, torch's AMX check answers no and w4jit is capped to
# that tier (tests/python/as_cpu/sitecustomize.py says what it cannot hide).
#
# Environment: W4JIT_VENV_CACHE, W4JIT_VLLM_VERSION, ... as for
# scripts/vllm-venv.sh.
set -euo pipefail
if [[ "${1:-}" == --as-cpu=* ]]; then
  export W4JIT_AS_CPU="${1#--as-cpu=}"
  shift
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="$(bash "$repo/scripts/vllm-venv.sh" --with-w4jit | tail -n 1)"
run="$(mktemp -d "${TMPDIR:-/tmp}/w4jit-vllm.XXXXXX")"
trap 'rm -rf "$run"' EXIT
cd "$run"
if [[ -n "${W4JIT_AS_CPU:-}" ]]; then
  export PYTHONPATH="$repo/tests/python/as_cpu${PYTHONPATH:+:$PYTHONPATH}"
  "$venv/bin/python" -c 'import os, torch; assert not torch.cpu._is_amx_tile_supported(); print("test-vllm: as", os.environ["W4JIT_AS_CPU"], "W4JIT_ISA=" + os.environ["W4JIT_ISA"])'
fi
# --durations: the slowest tests in every log, since most of this lane's
# time is engine starts (docs/contributing.md's CI timings).
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -q --durations=12 \
  -p no:cacheprovider --rootdir "$repo/tests/python" \
  "$repo/tests/python/test_vllm_plugin.py" "$@"
