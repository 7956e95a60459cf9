#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and
# runs each for SECONDS (default 60) on the seed corpus in fuzz/corpus/.
# New inputs go to build/fuzz/corpus/<target>/ (the tree's corpus is only
# read); a crash is written to build/fuzz/crashes/ and fails the script.
# A fuzzer is one process on one core, so as many run at once as there are
# cores (each still gets its SECONDS of a whole core).
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
bash scripts/setup-deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
mkdir -p build/fuzz/crashes

fuzz_one() {
  local target="$1"
  mkdir -p "build/fuzz/corpus/$target"
  "build/fuzz/fuzz/${target}_fuzzer" -max_total_time="$seconds" \
    -print_final_stats=1 -rss_limit_mb=4096 \
    -artifact_prefix="build/fuzz/crashes/${target}-" \
    "build/fuzz/corpus/$target" "fuzz/corpus/$target" \
    >"build/fuzz/$target.log" 2>&1
}

targets=(layer tuning c_api)
declare -A pid_of
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do
    wait -n || true  # each target's status is read from its own pid below
  done
  echo "fuzz: $target for ${seconds}s"
  fuzz_one "$target" &
  pid_of[$target]=$!
done
status=0
for target in "${targets[@]}"; do
  log="build/fuzz/$target.log"
  if ! wait "${pid_of[$target]}"; then
    echo "fuzz: $target FAILED, see $log and build/fuzz/crashes/" >&2
    tail -40 "$log" >&2
    status=1
  fi
  # The last coverage line and the rate, for the record.
  echo "fuzz: $target"
  grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true
  grep -E 'average_exec_per_sec' "$log" || true
done
exit "$status"
