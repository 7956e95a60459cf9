"""Finds and loads libw4jit_torch.so (once), registering torch.ops.w4jit.*
and torch.classes.w4jit.Linear."""
import os
import threading

import torch

LIBRARY_NAME = "libw4jit_torch.so"
_lock = threading.Lock()
_loaded_path = None


def library_path():
    """The library this package loads: $W4JIT_TORCH_LIBRARY if set, else the
    one next to this file (the build tree and an install both put it there).
    """
    override = os.environ.get("W4JIT_TORCH_LIBRARY")
    if override:
        return override
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)


def load():
    """Loads the op library into torch; later calls do nothing."""
    global _loaded_path
    with _lock:
        if _loaded_path is None:
            path = library_path()
            if not os.path.exists(path):
                raise ImportError(
                    f"w4jit: {path} not found; build the CMake tree with "
                    "libtorch-dev installed, or set W4JIT_TORCH_LIBRARY")
            torch.ops.load_library(path)
            # torch.compile's fake kernels and fake classes (torch >= 2.4).
            from . import _fake
            _fake.register()
            _loaded_path = path
    return _loaded_path
