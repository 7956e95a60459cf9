"""What both plugins of this folder set up before zentorch's tests import.

1. No hypothesis example database (independent_runs): hypothesis would
   otherwise save each failing example under .hypothesis/ in their
   checkout and replay it first in every later run, whichever plugin ran
   it, so that a failure found against one side is retried against the
   other and runs stop being independent draws.
2. Opt-in diagnostics (ZENTORCH_COMPAT_DIAGNOSE=1): say why a comparison
   failed, not only that it did. zentorch's tests compare with
   torch.allclose and report False; with the variable set, torch.allclose
   is wrapped so that each False comparison also prints (to stderr, which
   pytest shows beside the failure) how many elements are beyond the
   tolerance, how many of those are within one bf16 ulp of the reference
   (last-bit flips) or not finite, and the element that misses by the
   most: enough to tell a rounding flip from a wrong result. The return
   value is torch's, unchanged.
"""
import os
import sys

import hypothesis
import torch

_allclose = torch.allclose


def _bf16_ulp(v):
    """One bf16 ulp at |v| (f64 tensor), at least that of the smallest
    normal."""
    a = v.abs().clamp(min=2.0**-126)
    return torch.exp2(torch.floor(torch.log2(a)) - 7)


def describe(got, want, rtol, atol):
    """One line: how `got` misses `want` under allclose(rtol, atol)."""
    g, w = got.detach().double(), want.detach().double()
    g, w = torch.broadcast_tensors(g, w)
    d = (g - w).abs()
    beyond = ~(d <= atol + rtol * w.abs())
    n = int(beyond.sum())
    if n == 0:
        return f"allclose False with every element within tolerance ({g.shape})"
    finite = torch.isfinite(g) & torch.isfinite(w)
    flips = int((beyond & finite & (d <= _bf16_ulp(w))).sum())
    # The element that misses by the most, relative to its tolerance.
    tol = atol + rtol * w.abs()
    ratio = torch.where(finite, d / tol, torch.zeros_like(d)).flatten()
    i = int(ratio.argmax())
    return (f"allclose(rtol={rtol}, atol={atol}) False: {n} of {g.numel()} "
            f"beyond it, {flips} of them within one bf16 ulp, "
            f"{int((beyond & ~finite).sum())} not finite; worst finite miss "
            f"|diff| {float(d.flatten()[i]):.6g} (tolerance "
            f"{float(tol.flatten()[i]):.3g}) at want {float(w.flatten()[i]):.6g},"
            f" got {float(g.flatten()[i]):.6g}")


def _wrapped(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    result = _allclose(input, other, rtol=rtol, atol=atol,
                       equal_nan=equal_nan)
    if not result:
        print("compat_diagnostics: " + describe(input, other, rtol, atol),
              file=sys.stderr)
    return result


def independent_runs():
    """Makes the default hypothesis settings, which the tests' @settings
    inherit when their modules are imported, keep no example database."""
    hypothesis.settings.register_profile("zentorch_compat", database=None)
    hypothesis.settings.load_profile("zentorch_compat")


def install_diagnostics_if_asked():
    """Wraps torch.allclose when ZENTORCH_COMPAT_DIAGNOSE=1; returns whether
    it did."""
    if os.environ.get("ZENTORCH_COMPAT_DIAGNOSE") != "1":
        return False
    torch.allclose = _wrapped
    return True
