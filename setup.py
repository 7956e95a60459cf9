"""Builds libw4jit_torch.so with CMake for `pip install .` (pyproject.toml).

The library is configured against the torch this interpreter imports
(torch.utils.cmake_prefix_path when that holds TorchConfig.cmake, as pip's
torch wheels do; otherwise CMake's default search, which finds Debian's
libtorch-dev), and CMake is told torch's version so that a mismatch between
the two is a configure error, not a library that fails to load. Only the
torch target and what it links are built (no tests, no benchmarks); the
library lands inside the installed package, where w4jit/_library.py looks.
"""
import os
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

LIBRARY = "libw4jit_torch.so"


class CMakeLibrary(Extension):
    def __init__(self):
        super().__init__("w4jit.libw4jit_torch", sources=[])


class CMakeBuild(build_ext):
    def get_ext_filename(self, fullname):
        # The exact name _library.py loads, not a CPython extension suffix.
        return os.path.join(*fullname.split(".")[:-1], LIBRARY)

    def build_extension(self, ext):
        import torch  # the interpreter's own torch
        import torch.utils

        source = os.path.dirname(os.path.abspath(__file__))
        # One CMake tree per torch release: a checkout installed into venvs
        # with different torches keeps both trees, each reused.
        build = os.path.join(os.path.abspath(self.build_temp),
                             f"cmake-torch{torch.__version__}")
        args = [
            "-DCMAKE_BUILD_TYPE=Release",
            "-DW4JIT_BUILD_TESTS=OFF",
            "-DW4JIT_BUILD_PERF=OFF",
            "-DW4JIT_REQUIRE_TORCH=ON",
            f"-DW4JIT_TORCH_VERSION={torch.__version__}",
        ]
        if shutil.which("ninja"):
            args += ["-G", "Ninja"]
        prefix = torch.utils.cmake_prefix_path
        if os.path.exists(os.path.join(prefix, "Torch", "TorchConfig.cmake")):
            args.append(f"-DCMAKE_PREFIX_PATH={prefix}")
        subprocess.check_call(["cmake", "-S", source, "-B", build] + args)
        subprocess.check_call(["cmake", "--build", build, "--target",
                               "w4jit_torch", "--parallel",
                               str(os.cpu_count() or 1)])
        built = os.path.join(build, "python", "w4jit", LIBRARY)
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)


setup(ext_modules=[CMakeLibrary()], cmdclass={"build_ext": CMakeBuild})
