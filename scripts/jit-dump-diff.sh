#!/usr/bin/env bash
# Compares two W4JIT_DUMP_DIR dumps (one <kernel name>.bin per generated
# kernel): the check that a refactor of a generator left its code
# byte-identical. Prints the counts, names every kernel that is only in
# one dump or differs, and exits 1 if any does.
#
#   W4JIT_DUMP_DIR=/tmp/before build/release/tools/w4jit selftest --seed=1 --configs=300
#   ... change the generator, rebuild ...
#   W4JIT_DUMP_DIR=/tmp/after  build/release/tools/w4jit selftest --seed=1 --configs=300
#   scripts/jit-dump-diff.sh /tmp/before /tmp/after
set -euo pipefail
if [[ $# -ne 2 || ! -d $1 || ! -d $2 ]]; then
  echo "usage: $0 BEFORE_DIR AFTER_DIR" >&2
  exit 2
fi
before=$1 after=$2
compared=0 differ=0 only_before=0 only_after=0
while IFS= read -r name; do
  if [[ ! -f $after/$name ]]; then
    echo "only in $before: $name"
    only_before=$((only_before + 1))
    continue
  fi
  compared=$((compared + 1))
  if ! cmp -s "$before/$name" "$after/$name"; then
    echo "differs: $name"
    differ=$((differ + 1))
  fi
done < <(cd "$before" && find . -maxdepth 1 -name '*.bin' -printf '%f\n' | sort)
while IFS= read -r name; do
  if [[ ! -f $before/$name ]]; then
    echo "only in $after: $name"
    only_after=$((only_after + 1))
  fi
done < <(cd "$after" && find . -maxdepth 1 -name '*.bin' -printf '%f\n' | sort)
echo "compared $compared kernels: $differ differ, $only_before only before," \
  "$only_after only after"
[[ $differ -eq 0 && $only_before -eq 0 && $only_after -eq 0 ]]
