#!/usr/bin/env bash
# Builds the C example against an installed w4jit with pkg-config only.
# usage: build.sh PREFIX OUT_BINARY
set -euo pipefail
prefix="$1"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
cc -std=c99 -Wall -Wextra -Werror "$(dirname "$0")/main.c" -o "$2" \
  $(pkg-config --cflags --libs w4jit) -lstdc++
