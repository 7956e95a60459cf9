# Sourced by scripts/torch-venv.sh and scripts/vllm-venv.sh: the skeleton of
# a cached virtual environment. The caller sets
#   venv_tag    its name in messages ("torch-venv")
#   venv        the venv's folder, under ${W4JIT_VENV_CACHE:-~/.cache/w4jit}
# and defines two functions:
#   venv_healthy   exit 0 when "$venv" imports everything at the pinned
#                  versions (run with cwd /, stdout and stderr discarded)
#   venv_install   fill the new, empty "$venv" (it exists, with pip)
# then calls venv_ensure, which reuses a healthy venv, or builds it from
# scratch under a lock (one builder at a time; a second caller waits, then
# finds it healthy) and checks it. Progress goes to stderr.

venv_base_python="${W4JIT_VENV_PYTHON:-/usr/bin/python3}"
venv_cache="${W4JIT_VENV_CACHE:-$HOME/.cache/w4jit}"

venv_check() {
  [ -x "$venv/bin/python" ] || return 1
  (cd / && venv_healthy >/dev/null 2>&1)
}

venv_ensure() {
  mkdir -p "$venv_cache"
  exec 9>"$venv.lock"
  flock 9
  if venv_check; then
    echo "$venv_tag: reusing $venv" >&2
    return 0
  fi
  echo "$venv_tag: creating $venv from PyPI" >&2
  local start
  start=$(date +%s)
  rm -rf "$venv"
  "$venv_base_python" -m venv "$venv"
  venv_install
  if ! venv_check; then
    echo "$venv_tag: $venv was installed but does not import what it" \
         "must at the pinned versions" >&2
    exit 1
  fi
  echo "$venv_tag: created in $(( $(date +%s) - start )) s," \
       "$(du -sh "$venv" | cut -f1)" >&2
}
