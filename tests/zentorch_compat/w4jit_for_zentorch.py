"""pytest plugin: zentorch's own op tests, run against w4jit.

Loaded before the test modules are imported (`-p w4jit_for_zentorch`, or
through this folder's conftest.py), it

1. turns on zentorch-compatible numerics (W4JIT_NUMERICS=zentorch, unless
   the environment already names a value): each dequantized weight is
   rounded to bf16 before the dot products, as zentorch / AOCL compute it
   and as zentorch's test references assume (docs/numerics-zentorch.md);
2. puts a stand-in `zentorch` module in sys.modules, so that the tests'
   `import zentorch` finds it instead of the real plugin, with the few
   attributes their utilities read: the CPU capability queries (bf16 is
   supported by every w4jit tier, AVX-512-only ops are not claimed),
   `_utils.counters` and the fp16 registry;
3. makes torch.ops.zentorch a namespace whose zentorch_X is
   torch.ops.w4jit.X wherever w4jit has an equivalent
   (python/w4jit/zentorch_contract.py lists the pairs; fused_moe and
   flush_moe_weight_cache besides), so that the tests' calls reach w4jit
   unchanged; any other name (the utilities name zentorch's int8 qlinear
   ops at import) is a placeholder that raises when called;
4. turns hypothesis's example database off, so that runs are
   independent draws, and with ZENTORCH_COMPAT_DIAGNOSE=1 says how each
   failing comparison missed (compat_common.py).

Nothing of zentorch's is copied here; their test files stay in their own
checkout (README.md in this folder says how to run them).
"""
import collections
import os
import sys
import types

os.environ.setdefault("W4JIT_NUMERICS", "zentorch")

import torch  # noqa: E402
# The real `import zentorch` imports torch's compile stack; the utilities'
# reset_dynamo() reaches into this submodule without importing it.
import torch._functorch._aot_autograd.autograd_cache  # noqa: E402,F401

import w4jit  # noqa: E402,F401  (loads torch.ops.w4jit)
from w4jit import zentorch_contract  # noqa: E402

import compat_common  # noqa: E402

# zentorch ops without a schema in the contract that w4jit also offers.
_EXTRA_OPS = ("zentorch_fused_moe", "zentorch_flush_moe_weight_cache")


def _zentorch_names():
    names = [s.split("(", 1)[0] for s in zentorch_contract.ZENTORCH_SCHEMAS]
    return names + list(_EXTRA_OPS)


def _stand_in_module():
    zen = types.ModuleType("zentorch")
    zen.__version__ = "w4jit"
    zen.__w4jit__ = True
    c = types.ModuleType("zentorch._C")
    c.is_bf16_supported = lambda: True  # every w4jit tier takes bf16
    c.is_avx512_supported = lambda: False  # claims no AVX-512-only op
    c.is_fp16_supported = lambda: False
    utils = types.ModuleType("zentorch._utils")
    utils.counters = collections.defaultdict(collections.Counter)
    zen._C = c
    zen._utils = utils
    zen.is_fp16_capable = lambda *args, **kwargs: False
    zen.get_fp16_registry = lambda: {}
    return {"zentorch": zen, "zentorch._C": c, "zentorch._utils": utils}


class _NotInW4jit:
    """A zentorch op w4jit has no equivalent for (the test utilities name
    some, e.g. the int8 qlinear ops, when they are imported): any call
    says so."""

    def __init__(self, name):
        self._name = name
        self.default = self

    def __getattr__(self, attr):  # .out and other overloads
        return self

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"torch.ops.zentorch.{self._name}: w4jit has no "
                           "equivalent (tests/zentorch_compat)")


class _ZentorchNamespace:
    """Stands for torch.ops.zentorch: the mapped ops, else _NotInW4jit."""

    def __init__(self, mapped):
        for name, ours in mapped.items():
            setattr(self, name, getattr(torch.ops.w4jit, ours))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _NotInW4jit(name)


def _point_ops_at_w4jit():
    """torch.ops.zentorch.zentorch_X -> torch.ops.w4jit.X; returns the
    pairs installed."""
    mapped = {}
    for name in _zentorch_names():
        ours = zentorch_contract.w4jit_name(name)
        if hasattr(torch.ops.w4jit, ours):
            mapped[name] = ours
    setattr(torch.ops, "zentorch", _ZentorchNamespace(mapped))
    return mapped


sys.modules.update(_stand_in_module())
MAPPED = _point_ops_at_w4jit()
compat_common.independent_runs()
DIAGNOSE = compat_common.install_diagnostics_if_asked()


def pytest_report_header(config):
    return (f"w4jit_for_zentorch: W4JIT_NUMERICS="
            f"{os.environ.get('W4JIT_NUMERICS')}; diagnostics {DIAGNOSE}; "
            f"torch.ops.zentorch -> "
            f"torch.ops.w4jit for {len(MAPPED)} ops: "
            + ", ".join(sorted(MAPPED)))
