#!/usr/bin/env bash
# The vLLM lane: tests/python/test_vllm_plugin.py inside vLLM's CPU venv
# (scripts/vllm-venv.sh), with this working tree installed there as the
# `w4jit` distribution (so vLLM finds its `vllm.general_plugins` entry
# point). Builds the extension against the venv's torch; the build tree is
# kept under build/ of the checkout, so a second run rebuilds only what
# changed. Unlike scripts/test-torch2.sh this modifies the venv (the plugin
# is found through installed metadata): one checkout per venv at a time.
#
#   scripts/test-vllm.sh [pytest args...]
#
# Environment: W4JIT_VENV_CACHE, W4JIT_VLLM_VERSION, ... as for
# scripts/vllm-venv.sh.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="$(bash "$repo/scripts/vllm-venv.sh" --with-w4jit | tail -n 1)"
run="$(mktemp -d "${TMPDIR:-/tmp}/w4jit-vllm.XXXXXX")"
trap 'rm -rf "$run"' EXIT
cd "$run"
PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -q \
  -p no:cacheprovider --rootdir "$repo/tests/python" \
  "$repo/tests/python/test_vllm_plugin.py" "$@"
