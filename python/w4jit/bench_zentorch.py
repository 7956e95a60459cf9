"""Alias of w4jit.bench.zentorch for one release (_alias.py)."""
from ._alias import alias

alias(__name__, "zentorch")
