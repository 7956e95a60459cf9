"""Alias of w4jit.bench.vllm_models for one release (_alias.py)."""
from ._alias import alias

alias(__name__, "vllm_models")
