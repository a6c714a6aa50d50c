"""`torch.nn.modules.utils`' argument helpers: `_pair(3)` is (3, 3), a sequence is kept.

>>> import kiln as kn
>>> kn.nn.modules.utils._triple(2), kn.nn.modules.utils._pair([1, 2])
((2, 2, 2), (1, 2))
"""

from collections.abc import Iterable
from itertools import repeat

__all__ = ["_ntuple", "_pair", "_quadruple", "_single", "_triple"]


def _ntuple(n: int, name: str = "parse"):
    """A function making an `n`-tuple of an argument (a sequence stays as it is)."""

    def parse(x):
        if isinstance(x, Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")
