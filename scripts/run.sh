#!/usr/bin/env bash
# The main job: builds the release tree, prints what w4jit detects on this
# CPU, then checks and times the kernels on the Llama-3-8B layers against the
# measured roofline and oneDNN. Extra arguments go to `w4jit bench layers`
# (try --help, or --quick for a short run), or to another job of `w4jit
# bench` when they start with its name (`scripts/run.sh moe --quick`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
build/release/tools/w4jit info
echo
case "${1:-}" in
  layers|scaling|accuracy|model|moe) build/release/tools/w4jit bench "$@" ;;
  *) build/release/tools/w4jit bench layers "$@" ;;
esac
