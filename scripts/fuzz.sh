#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and
# runs each for SECONDS (default 60) on the seed corpus in fuzz/corpus/.
# New inputs go to build/fuzz/corpus/<target>/ (the tree's corpus is only
# read); a crash is written to build/fuzz/crashes/ and fails the script.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
bash scripts/setup-deps.sh
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
mkdir -p build/fuzz/crashes
status=0
for target in layer tuning c_api; do
  mkdir -p "build/fuzz/corpus/$target"
  log="build/fuzz/$target.log"
  echo "fuzz: $target for ${seconds}s"
  if ! "build/fuzz/fuzz/${target}_fuzzer" -max_total_time="$seconds" \
      -print_final_stats=1 -rss_limit_mb=4096 \
      -artifact_prefix="build/fuzz/crashes/${target}-" \
      "build/fuzz/corpus/$target" "fuzz/corpus/$target" >"$log" 2>&1; then
    echo "fuzz: $target FAILED, see $log and build/fuzz/crashes/" >&2
    tail -40 "$log" >&2
    status=1
  fi
  # The last coverage line and the rate, for the record.
  grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true
  grep -E 'average_exec_per_sec' "$log" || true
done
exit "$status"
