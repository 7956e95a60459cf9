#!/usr/bin/env bash
# Builds everything and runs the whole test suite.
#   scripts/test.sh          release build (build/release)
#   scripts/test.sh asan     AddressSanitizer + UBSan build (build/asan)
#   scripts/test.sh tsan     ThreadSanitizer build (build/tsan): the
#                            threading and concurrency tests
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
bash scripts/setup-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
