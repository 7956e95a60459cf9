#!/usr/bin/env bash
# Installs the Debian packages w4jit configures, builds and tests with, if any
# is missing. The list is what a bare Debian bookworm root (debootstrap
# --variant=minbase) needs; scripts/fresh-machine-check.sh proves it.
# Works as root, or through sudo for other users. Idempotent, and silent when
# everything is already there.
set -euo pipefail

PACKAGES=(
  # Toolchain and build system.
  cmake ninja-build g++ pkg-config
  # Library dependencies.
  libxbyak-dev libcpuinfo-dev libabsl-dev nlohmann-json3-dev
  # The command line's flags library (cli/flags.h), header-only.
  libcli11-dev
  # Tests and benchmarks.
  libgtest-dev libgmock-dev libbenchmark-dev
  # oneDNN, the benchmark peer. Debian's dnnl-config.cmake calls
  # find_package(OpenCL REQUIRED), and --no-install-recommends leaves the
  # OpenCL headers and loader out, so they are listed here.
  libdnnl-dev ocl-icd-opencl-dev
  # The PyTorch custom-op library and its Python tests (built when Torch is
  # found).
  libtorch-dev python3-torch python3-pytest
  # Property tests of the torch ops (tests/python/test_properties.py).
  python3-hypothesis
  # `python3 -m w4jit.report`'s charts (the package's optional "report"
  # extra; tests/python/test_report.py skips them without it).
  python3-matplotlib
  # `pip install .` of the Python package into a venv over the system
  # site packages (scripts/pip-install-check.sh).
  python3-venv python3-pip python3-setuptools python3-wheel
  # The fuzz preset: clang 14 and its libFuzzer runtime
  # (libclang_rt.fuzzer-x86_64.a, a Recommends that we must name).
  clang libclang-rt-14-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
