"""w4jit inside vLLM: a `vllm.general_plugins` entry point (docs/vllm.md).

vLLM calls register() in every process it starts (the front end, the engine
core, each worker) before it builds a model. register() puts
W4jitWNA16LinearKernel first in vLLM's list of CPU mixed-precision linear
kernels, so compressed-tensors and GPTQ int4 layers run on w4jit, and
wraps vLLM's int4 MoE methods (compressed-tensors, GPTQ, AWQ, MoeWNA16) so
that their experts do, whichever experts class vLLM chose (moe_method.py
says why there). A vLLM whose internals moved so that a hook cannot be
installed gets one log line and its own kernels, never a crash. Nothing here is
imported by `import w4jit`; vLLM is imported only inside register().

Switches: VLLM_PLUGINS (vLLM's own allow-list of plugin names; leave "w4jit"
out to switch the plugin off), VLLM_CPU_INT4_W4A8 (DA8W4 when set, as vLLM's
and zentorch's CPU kernels read it; W4A16 otherwise),
VLLM_DISABLED_KERNELS=W4jitWNA16LinearKernel (vLLM's own switch, per kernel),
W4JIT_VLLM=0 (the plugin does nothing), W4JIT_VLLM_MOE=0 (dense layers only).
"""
import logging
import os

_registered = False
_log = logging.getLogger("vllm.w4jit")

# The vLLM releases (major.minor) the plugin's hooks were written against
# and scripts/test-vllm.sh runs; another release gets a warning at load,
# and each hook still checks at install that vLLM's internals fit it.
SUPPORTED_VLLM = ("0.31", "0.32")


def _check_release():
    """Says once, at load, when this vLLM is outside SUPPORTED_VLLM."""
    import vllm
    version = str(getattr(vllm, "__version__", "unknown"))
    if ".".join(version.split("+")[0].split(".")[:2]) not in SUPPORTED_VLLM:
        _log.warning("w4jit: vLLM %s is outside the releases the plugin is "
                     "tested with (%s); its hooks install where vLLM's "
                     "internals fit them", version, ", ".join(SUPPORTED_VLLM))


def _init_amx_permission():
    """Asks Linux for the AMX tile state (XCOMP_PERM) once per process.

    vLLM's AMX attention and its AMX int4 kernels execute tile instructions
    without asking; zentorch asks as a side effect of its import, so on an
    AMX CPU without zentorch the first tile instruction would fault. torch
    has the request built in; it returns False where there is no AMX."""
    import torch
    init = getattr(getattr(torch._C, "_cpu", None), "_init_amx", None)
    if init is not None:
        try:
            init()
        except RuntimeError as e:  # a kernel that refuses: say so, go on
            _log.warning("w4jit: AMX tile permission not granted (%s)", e)


def register():
    """The entry point vLLM calls (`vllm.general_plugins`, name "w4jit").

    Idempotent: vLLM may call it more than once in a process."""
    global _registered
    if _registered:
        return
    _registered = True
    if os.environ.get("W4JIT_VLLM", "1") == "0":
        _log.info("w4jit: W4JIT_VLLM=0, vLLM keeps its own int4 kernels")
        return
    from vllm.platforms import current_platform
    if not current_platform.is_cpu():
        _log.info("w4jit: vLLM's platform is %s, not a CPU; the plugin does "
                  "nothing", current_platform.device_name)
        return
    _check_release()
    _init_amx_permission()
    try:
        import w4jit  # noqa: F401  (loads the op library)
    except Exception as e:  # noqa: BLE001  (any load failure: fall back)
        _log.warning("w4jit: the op library did not load (%s); vLLM keeps "
                     "its own int4 kernels", e)
        return
    _install("linear_kernel", "dense int4 layers")
    if os.environ.get("W4JIT_VLLM_MOE", "1") == "0":
        _log.info("w4jit: W4JIT_VLLM_MOE=0, MoE layers stay on vLLM's "
                  "experts")
        return
    _install("moe_method", "int4 MoE experts")


def _install(module, what):
    """Imports one hook module and installs it; a vLLM that moved what the
    hook reaches into (an ImportError or AttributeError, or anything else
    the import raises) leaves that part to vLLM, with the reason."""
    import importlib
    try:
        importlib.import_module(f"{__name__}.{module}").install()
    except Exception as e:  # noqa: BLE001  (any vLLM internals: step aside)
        _log.warning("w4jit: this vLLM's internals do not fit the plugin's "
                     "%s hook (%s: %s); vLLM keeps its own %s", module,
                     type(e).__name__, e, what)
