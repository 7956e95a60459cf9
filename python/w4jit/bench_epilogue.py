"""Alias of w4jit.bench.epilogue for one release (_alias.py)."""
from ._alias import alias

alias(__name__, "epilogue")
