"""PyTorch's `sym_*` helpers (`sym_int`, `sym_float`, `sym_max`, `sym_min`, `sym_not`,
`sym_ite`, `sym_sum`, `sym_sqrt`): PyTorch's tracer gives them symbolic sizes; kiln's shapes
are Python ints (or named dims), so on the numbers they get they are PyTorch's plain ones."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..errors import ArgumentAssertionError

__all__ = [
    "sym_float", "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum",
]  # fmt: skip


def sym_int(a):
    """int(a), truncating a float toward zero, as PyTorch's `sym_int`.

    >>> import kiln as kn
    >>> kn.sym_int(3.7), kn.sym_int(-3.7)
    (3, -3)
    """
    return builtins.int(a)


def sym_float(a):
    """float(a), as PyTorch's `sym_float`.

    >>> import kiln as kn
    >>> kn.sym_float(3)
    3.0
    """
    return builtins.float(a)


_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)


def _numbers(name: str, *values) -> bool:
    """Whether any of the values is a float (AssertionError for one that is not an int or a
    float, NumPy's included, as PyTorch's assertion)."""
    for v in values:
        if not isinstance(v, _NUMBERS):
            raise ArgumentAssertionError(f"{name}: expected {_NUMBERS}, got {type(v)}")
    return any(not isinstance(v, (np.integer, builtins.int)) for v in values)


def sym_max(a, b):
    """The larger of two numbers, a float if either is one, as PyTorch's `sym_max`.

    >>> import kiln as kn
    >>> kn.sym_max(2, 3), kn.sym_max(3, 2.5)
    (3, 3.0)
    """
    floats = _numbers("sym_max", a, b)
    return builtins.float(builtins.max(a, b)) if floats else builtins.max(a, b)


def sym_min(a, b):
    """The smaller of two numbers, a float if either is one, as PyTorch's `sym_min`.

    >>> import kiln as kn
    >>> kn.sym_min(2, 3), kn.sym_min(2, 3.5)
    (2, 2.0)
    """
    floats = _numbers("sym_min", a, b)
    return builtins.float(builtins.min(a, b)) if floats else builtins.min(a, b)


def sym_not(a):
    """not a, as PyTorch's `sym_not`.

    >>> import kiln as kn
    >>> kn.sym_not(True)
    False
    """
    return not a


def sym_ite(b, t, f):
    """t if b else f (b a bool; t and f of one type), as PyTorch's `sym_ite`.

    >>> import kiln as kn
    >>> kn.sym_ite(False, 1, 2)
    2
    """
    if not isinstance(b, builtins.bool):
        raise ArgumentAssertionError(f"sym_ite: expected bool, got {type(b)}")
    if type(t) is not type(f):
        raise ArgumentAssertionError(f"sym_ite: type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def sym_sum(*args):
    """The sum of the numbers (`sym_sum([a, b, c])` or `sym_sum(a, b, c)`), as PyTorch's
    `sym_sum`.

    >>> import kiln as kn
    >>> kn.sym_sum([1, 2, 3]), kn.sym_sum(1.5, 2)
    (6, 3.5)
    """
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_sqrt(a):
    """math.sqrt(a) (a float), as PyTorch's `sym_sqrt` on a number.

    >>> import kiln as kn
    >>> kn.sym_sqrt(4)
    2.0
    """
    return math.sqrt(a)
