"""pytest plugin: zentorch's own op tests, run against zentorch itself.

The baseline column beside w4jit_for_zentorch.py: the real plugin is
imported, nothing of it is replaced. One gap between its wheel and its test
utilities is bridged: the utilities import `is_fp16_capable` and
`get_fp16_registry` from `zentorch`, which the 2.14.0.1 wheel keeps in
`zentorch._fp16_capabilities` only; without them the utilities' import
fails and every test skips as "ZENTORCH is not installed". Where the
package already has the names, nothing is touched.

zentorch's weight cache (ZENDNNL_MATMUL_WEIGHT_CACHE) is left as the
environment sets it: README.md in this folder says what each setting gives.
As with the w4jit plugin, hypothesis's example database is off and
ZENTORCH_COMPAT_DIAGNOSE=1 makes each failing comparison say how it missed
(compat_common.py).
"""
import os

import zentorch

import compat_common

_FP16_NAMES = ("is_fp16_capable", "get_fp16_registry")


def _bridge_fp16_names():
    """Re-exports the fp16 queries the utilities expect on the package;
    returns the names it had to add."""
    missing = [n for n in _FP16_NAMES if not hasattr(zentorch, n)]
    if missing:
        from zentorch import _fp16_capabilities
        for name in missing:
            setattr(zentorch, name, getattr(_fp16_capabilities, name))
    return missing


BRIDGED = _bridge_fp16_names()
compat_common.independent_runs()
DIAGNOSE = compat_common.install_diagnostics_if_asked()


def pytest_report_header(config):
    c = zentorch._C
    cache = os.environ.get("ZENDNNL_MATMUL_WEIGHT_CACHE", "unset (on)")
    return (f"zentorch_as_installed: zentorch {zentorch.__version__}; "
            f"bf16 kernels {c.is_bf16_supported()}, avx512 "
            f"{c.is_avx512_supported()}; ZENDNNL_MATMUL_WEIGHT_CACHE={cache}; "
            f"diagnostics {DIAGNOSE}; "
            f"re-exported from zentorch._fp16_capabilities: "
            f"{', '.join(BRIDGED) or 'none needed'}")
